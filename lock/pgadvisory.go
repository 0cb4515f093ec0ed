package lock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
)

// The PostgreSQL advisory-lock recipes, the lock most applications already
// have: pg-advisory holds a session lock (pg_try_advisory_lock) on the
// client's own connection until pg_advisory_unlock; pg-advisory-xact holds
// a transaction lock (pg_try_advisory_xact_lock) inside a transaction that
// stays open for the hold and ends with COMMIT. PostgreSQL gives neither a
// TTL: a session lock lives as long as its session, a transaction lock as
// long as its transaction. The lease the checker reads is the client's own
// (the TTL asked), renewed by a heartbeat that asks the server whether this
// session still holds the key (pg_locks), so a client stops at its next
// step once the server no longer does.
const (
	PGAdvisory     = "pg-advisory"
	PGAdvisoryXact = "pg-advisory-xact"
)

// FencePGSequence: recipes pg-advisory and pg-advisory-xact, nextval of a
// sequence drawn in the granting statement. Sequences are replicated, but
// WAL-logged 32 values ahead of use, so a promoted replica continues above
// every number whose log record reached it.
const FencePGSequence = "pg-sequence"

// FenceSequence is the sequence the deployment creates for the fence.
const FenceSequence = "lockjepsen_fence"

// AdvisoryKey is the bigint advisory lock key of a lock key: FNV-1a,
// non-negative so that pg_locks' (classid, objid) halves read it back as
// (key >> 32, key & 0xffffffff). The nemesis finds a holder's backend by it.
func AdvisoryKey(key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64() >> 2)
}

// ApplicationName is what a client's sessions call themselves
// (pg_stat_activity.application_name), so that a fault can tell whose
// backend holds a key.
func ApplicationName(client int) string { return "lockjepsen-client-" + strconv.Itoa(client) }

// HeldQuery asks whether the session running it holds advisory key $1.
const HeldQuery = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
	AND pid = pg_backend_pid() AND objsubid = 1 AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid)`

type pgAdvisory struct {
	cfg  Config
	xact bool

	mu   sync.Mutex // one session: pgx.Conn is not safe for concurrent use
	conn *pgx.Conn  // nil after a connection error: the next call dials a new session
	tx   pgx.Tx     // pg-advisory-xact: the open transaction of the held lock
	held string     // pg-advisory-xact: the key the open transaction holds
}

// The two recipes' catalog entries (lock/config.go lists them).
var (
	pgAdvisoryRecipe = Recipe{Name: PGAdvisory, Summary: "PostgreSQL's session advisory lock: pg_try_advisory_lock on the client's own connection, a pg_locks heartbeat, pg_advisory_unlock; fence = nextval of a sequence in the granting statement (no Valkey)",
		Ours: true, Lacks: func(Caps) []string { return nil }, open: openPGAdvisory, Speaks: []endpoint.Protocol{endpoint.Postgres},
		Server: checkPG, Fence: FencePGSequence, Valid: validatePG, NoExpiry: true, HostsExec: true,
		conform: func(c Config) (server, error) { return newPGServer(c) }}
	pgAdvisoryXactRecipe = Recipe{Name: PGAdvisoryXact, Summary: "PostgreSQL's transaction advisory lock: BEGIN; pg_try_advisory_xact_lock, held while the transaction stays open, COMMIT to release; fence = nextval in the granting statement (no Valkey)",
		Ours: true, Lacks: func(Caps) []string { return nil }, open: openPGAdvisoryXact, Speaks: []endpoint.Protocol{endpoint.Postgres},
		Server: checkPG, Fence: FencePGSequence, Valid: validatePG, NoExpiry: true}
)

func openPGAdvisory(cfg Config) (Lock, error) { return &pgAdvisory{cfg: cfg}, nil }
func openPGAdvisoryXact(cfg Config) (Lock, error) {
	return &pgAdvisory{cfg: cfg, xact: true}, nil
}

func (l *pgAdvisory) Recipe() string {
	if l.xact {
		return PGAdvisoryXact
	}
	return PGAdvisory
}
func (l *pgAdvisory) SelfRenewing() bool                  { return false }
func (l *pgAdvisory) Lost(string, string) <-chan struct{} { return nil }
func (l *pgAdvisory) SafeRelease() bool                   { return true }
func (l *pgAdvisory) Observe(Observer)                    {}

func (l *pgAdvisory) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
}

// session returns the open session, dialling a new one if the last was
// lost; a new session holds nothing.
func (l *pgAdvisory) session(ctx context.Context) (*pgx.Conn, error) {
	if l.conn != nil {
		return l.conn, nil
	}
	cc, err := pgx.ParseConfig(l.cfg.Service.DSN)
	if err != nil {
		return nil, fmt.Errorf("dsn %q: %w", l.cfg.Service.DSN, err)
	}
	cc.RuntimeParams["application_name"] = ApplicationName(l.cfg.Client)
	// The simple protocol: no prepared statements, which a pooler in
	// transaction mode would hand to server connections that never
	// prepared them.
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	dial := cc.DialFunc // pgx's own, its timeouts kept
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return hookConn(dial(ctx, network, addr))
	}
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	l.conn = c
	return c, nil
}

// drop forgets a session whose connection failed: what it held the server
// releases when it notices the session gone.
func (l *pgAdvisory) drop() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.tx, l.held = nil, nil, ""
}

// outcome maps an error: a statement the server answered with an error had
// no effect (fail); a connection that failed may or may not have run it
// (info), and the session is gone.
func (l *pgAdvisory) outcome(what string, err error) Result {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "57P") {
		// Operator intervention (57P01 admin_shutdown: pg_terminate_backend;
		// 57P02 crash_shutdown): the server says it ended this session, and
		// with it every lock the session held. A definite no, which stops
		// the holder at its next step, where a lost connection would not.
		l.drop()
		return fail(fmt.Errorf("%s: the server ended the session (%w): %w", what, ErrNotHeld, err))
	}
	if errors.As(err, &pe) && l.conn != nil && !l.conn.IsClosed() {
		if l.tx != nil {
			// An error inside the transaction aborts it, and its lock.
			_ = l.tx.Rollback(context.Background())
			l.tx, l.held = nil, ""
		}
		return fail(fmt.Errorf("%s: %w", what, err))
	}
	l.drop()
	return Result{history.Info, fmt.Errorf("%s: %w", what, err)}
}

func (l *pgAdvisory) Acquire(ctx context.Context, key, _ string, ttl time.Duration) (int64, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, err := l.session(ctx)
	if err != nil {
		return 0, fail(fmt.Errorf("connect: %w", err))
	}
	k := AdvisoryKey(key)
	var fence int64
	if !l.xact {
		err = c.QueryRow(ctx, `SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('`+FenceSequence+`') ELSE 0 END`, k).Scan(&fence)
		if err != nil {
			return 0, l.outcome("SELECT pg_try_advisory_lock", err)
		}
		if fence == 0 {
			return 0, contended(errors.New("pg_try_advisory_lock returned false"))
		}
		return l.fence(fence), ok()
	}
	if l.tx != nil {
		return 0, fail(fmt.Errorf("a transaction already holds %s: %w", l.held, ErrRefused))
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, l.outcome("BEGIN", err)
	}
	l.tx = tx
	err = tx.QueryRow(ctx, `SELECT CASE WHEN pg_try_advisory_xact_lock($1) THEN nextval('`+FenceSequence+`') ELSE 0 END`, k).Scan(&fence)
	if err != nil {
		return 0, l.outcome("SELECT pg_try_advisory_xact_lock", err)
	}
	if fence == 0 {
		_ = tx.Rollback(ctx)
		l.tx = nil
		return 0, contended(errors.New("pg_try_advisory_xact_lock returned false"))
	}
	l.held = key
	return l.fence(fence), ok()
}

// fence is the number a grant hands out: the sequence's, when fencing is on.
func (l *pgAdvisory) fence(n int64) int64 {
	if !l.cfg.Fencing {
		return 0
	}
	return n
}

// Extend is the heartbeat: it asks whether this session still holds the
// key. A session that lost it (a terminated backend, a pooler that ran the
// question on another server connection) gets a definite no.
func (l *pgAdvisory) Extend(ctx context.Context, key, _ string, _ time.Duration) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return fail(fmt.Errorf("heartbeat: the session that held the lock is gone (%w)", ErrNotHeld))
	}
	if l.xact && l.held != key {
		return fail(fmt.Errorf("heartbeat: no open transaction holds %s (%w)", key, ErrNotHeld))
	}
	var held bool
	var err error
	if l.xact {
		err = l.tx.QueryRow(ctx, HeldQuery, AdvisoryKey(key)).Scan(&held)
	} else {
		err = l.conn.QueryRow(ctx, HeldQuery, AdvisoryKey(key)).Scan(&held)
	}
	if err != nil {
		return l.outcome("heartbeat (pg_locks)", err)
	}
	if !held {
		return fail(fmt.Errorf("heartbeat: pg_locks shows this session without the lock (%w)", ErrNotHeld))
	}
	return ok()
}

func (l *pgAdvisory) Release(ctx context.Context, key, _ string) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return fail(fmt.Errorf("release: the session that held the lock is gone (%w)", ErrNotHeld))
	}
	if l.xact {
		if l.held != key {
			return fail(fmt.Errorf("COMMIT: no open transaction holds %s (%w)", key, ErrNotHeld))
		}
		if err := l.tx.Commit(ctx); err != nil {
			return l.outcome("COMMIT", err)
		}
		l.tx, l.held = nil, ""
		return ok()
	}
	var released bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, AdvisoryKey(key)).Scan(&released); err != nil {
		return l.outcome("SELECT pg_advisory_unlock", err)
	}
	if !released {
		return fail(fmt.Errorf("pg_advisory_unlock returned false: this session did not hold the lock (%w)", ErrNotHeld))
	}
	return ok()
}

// checkPG asks the server (through the pooler, if any) for its version:
// advisory locks and pg_locks are in every PostgreSQL the deployment runs.
func checkPG(ctx context.Context, cfg Config) (Caps, error) {
	caps := Caps{Product: "PostgreSQL"}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cc, err := pgx.ParseConfig(cfg.Service.DSN)
	if err != nil {
		return caps, fmt.Errorf("dsn %q: %w", cfg.Service.DSN, err)
	}
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return caps, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(ctx, "SHOW server_version").Scan(&caps.Version); err != nil {
		return caps, fmt.Errorf("PostgreSQL server_version: %w", err)
	}
	if f := strings.Fields(caps.Version); len(f) > 0 {
		caps.Version = f[0]
	}
	return caps, nil
}

// validatePG checks a pg-advisory recipe's config.
func validatePG(c *Config) error {
	switch {
	case c.Service.Protocol != endpoint.Postgres || c.Service.DSN == "":
		return fmt.Errorf("recipe %s: no PostgreSQL connection string: run it on --topology postgres", c.Recipe)
	case c.Wait.On() || c.WaitAOF.On():
		return fmt.Errorf("recipe %s cannot WAIT or WAITAOF: they are Valkey commands", c.Recipe)
	}
	return nil
}

func init() { registerRecipes(pgAdvisoryRecipe, pgAdvisoryXactRecipe) }
