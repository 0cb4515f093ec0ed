package resource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers driver "sqlite"
)

// Config says where the rows live and how they are guarded.
type Config struct {
	// Path is the SQLite database file, used when DSN is empty. It is created if
	// missing; WAL files sit beside it.
	Path string
	// DSN selects PostgreSQL (postgres://user@host:port/db?sslmode=disable).
	DSN string
	// Schema is a PostgreSQL schema to keep the tables in, created if missing; it
	// lets several runs or tests share one database. Empty: the DSN's search_path.
	Schema string
	// Mode is the fence rule; empty means ModeWrite, the Valkey 9 lock article's statement.
	Mode Mode
	// Runs are created at open when missing (value 0, last_fence 0).
	Runs []string
	// Log receives a line per fence number issued and per lease granted (the
	// service's log); nil keeps quiet.
	Log io.Writer
}

// Backend names the database behind a store.
type Backend string

const (
	SQLite   Backend = "sqlite"
	Postgres Backend = "postgres"
)

// Open connects, creates the schema when missing and the configured runs.
// Existing rows and attempts are kept: reopening a store is a restart.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeWrite
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	var (
		s   *Store
		err error
	)
	switch {
	case cfg.DSN != "" && cfg.Path != "":
		return nil, errors.New("resource: both a SQLite path and a PostgreSQL DSN given; choose one")
	case cfg.DSN != "":
		s, err = openPostgres(cfg)
	case cfg.Path != "":
		s, err = openSQLite(cfg)
	default:
		return nil, errors.New("resource: no database: give a SQLite path or a PostgreSQL DSN")
	}
	if err != nil {
		return nil, err
	}
	s.log = cfg.Log
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	for _, r := range cfg.Runs {
		if _, err := s.InitRun(ctx, r); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

func openSQLite(cfg Config) (*Store, error) {
	if strings.ContainsAny(cfg.Path, "?#") {
		return nil, fmt.Errorf("resource: SQLite path %q contains ? or #; use a plain file name", cfg.Path)
	}
	// WAL lets an export read while the service writes; the busy timeout makes a
	// second process wait for the write lock instead of failing with SQLITE_BUSY;
	// synchronous=NORMAL survives a killed process (what the tests and the nemesis
	// do) and gives up only the last commits on power loss. _txlock=immediate takes
	// the write lock at BEGIN, so a transaction never has to upgrade a read lock,
	// the one SQLITE_BUSY a busy timeout cannot wait out.
	dsn := cfg.Path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("resource: open SQLite %s: %w", cfg.Path, err)
	}
	// SQLite has one writer at a time anyway; one connection queues the
	// transactions in Go rather than in lock retries.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	return &Store{db: db, mode: cfg.Mode, backend: SQLite, where: cfg.Path}, nil
}

// CheckDSN says whether dsn is a PostgreSQL DSN pgx can read, without
// connecting: a command checks its --resource-dsn before it starts anything.
func CheckDSN(dsn string) error {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return fmt.Errorf("not a PostgreSQL DSN (want postgres://user@host:port/db?sslmode=disable): %w", err)
	}
	return nil
}

// ReachDSN connects to the database at dsn once and closes the connection:
// a run asks before its topology starts, so that an unreachable database is
// bad input, not a run that fails halfway.
func ReachDSN(ctx context.Context, dsn string) error {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("cannot reach %s:%d: %w", cc.Host, cc.Port, err)
	}
	return conn.Close(ctx)
}

func openPostgres(cfg Config) (*Store, error) {
	cc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("resource: PostgreSQL DSN: %w", err)
	}
	if cfg.Schema != "" {
		cc.RuntimeParams["search_path"] = cfg.Schema
	}
	db := stdlib.OpenDB(*cc)
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(64)
	db.SetConnMaxIdleTime(time.Minute)
	where := fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	if cfg.Schema != "" {
		where += " schema " + cfg.Schema
	}
	return &Store{db: db, mode: cfg.Mode, backend: Postgres, where: where, schema: cfg.Schema}, nil
}

func (s *Store) migrate(ctx context.Context) error {
	key := sqliteKey
	if s.backend == Postgres {
		key = postgresKey
		if s.schema != "" {
			q := "CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{s.schema}.Sanitize()
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("resource: create schema %s on %s: %w", s.schema, s.where, err)
			}
		}
	}
	for _, stmt := range strings.Split(fmt.Sprintf(schema, key), ";\n") {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("resource: create tables on %s %s: %w", s.backend, s.where, err)
		}
	}
	return s.migrateExtra(ctx)
}
