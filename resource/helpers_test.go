package resource

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgDSNEnv names the PostgreSQL the tests use; scripts/start-postgres.sh prints
// one and .ci/run exports it.
const pgDSNEnv = "LOCKJEPSEN_PG_DSN"

type backend struct {
	name Backend
	// fresh returns a config for an empty database of this backend, dropped at
	// the end of the test; calling Open on it twice is a restart.
	fresh func(t testing.TB, mode Mode) Config
}

// allBackends lists SQLite and PostgreSQL. The PostgreSQL half needs a DSN: without
// one its subtests skip with a message, except in CI, where they fail: silently
// skipping a backend is how it rots.
var allBackends = []backend{{name: SQLite, fresh: freshSQLite}, {name: Postgres, fresh: freshPostgres}}

func freshSQLite(t testing.TB, mode Mode) Config {
	return Config{Path: filepath.Join(t.TempDir(), "resource.db"), Mode: mode}
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// freshPostgres gives each test its own schema so tests share one database
// without seeing each other's rows.
func freshPostgres(t testing.TB, mode Mode) Config {
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		msg := fmt.Sprintf("%s is not set: start PostgreSQL with export %s=$(scripts/start-postgres.sh)", pgDSNEnv, pgDSNEnv)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: the PostgreSQL backend must be tested)")
		}
		t.Skip(msg)
	}
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := "t_" + name + "_" + hex.EncodeToString(rnd[:])
	t.Cleanup(func() {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		db := stdlib.OpenDB(*cc)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return Config{DSN: dsn, Schema: schema, Mode: mode}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startService serves cfg on loopback for the test and returns a client to it.
func startService(t testing.TB, cfg Config, runs ...string) (*Service, *Client) {
	t.Helper()
	cfg.Runs = append(cfg.Runs, runs...)
	svc, err := Start(ctxT(t), cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start service: %v", err)
	}
	c := NewClient(svc.Addr())
	t.Cleanup(func() {
		c.Close()
		if err := svc.Close(); err != nil {
			t.Errorf("close service: %v", err)
		}
	})
	return svc, c
}

func openStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	st, err := Open(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
