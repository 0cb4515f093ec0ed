package lock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockjepsen/lockjepsen/history"
)

// What client-test reads behind an exec program's back on PostgreSQL, by
// the convention docs/protocol.md states: key K's lock is the advisory lock
// on the bigint AdvisoryKey(K), held by the session of the grant; a fence,
// if returned, is a number nextval drew from the sequence FenceSequence.
// An advisory lock carries no value, so the server cannot say which token
// holds it: the foreign-token cases check that from the program's answers.
type pgServer struct {
	mu   sync.Mutex // pgx.Conn is not safe for concurrent use
	conn *pgx.Conn
}

// newPGServer connects to the server behind cfg.Service.DSN itself: through a
// pooler in transaction mode the suite's statements would share server
// sessions with the program's (its pg_terminate_backend once ended its own
// session along with the holder's), so it asks the server for its address
// and dials that.
func newPGServer(cfg Config) (*pgServer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := pgx.ParseConfig(cfg.Service.DSN)
	if err != nil {
		return nil, fmt.Errorf("LOCKJEPSEN_PG_DSN %q: %w", cfg.Service.DSN, err)
	}
	// PgBouncer's transaction mode keeps no prepared statement of a client.
	pc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	via, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	var host *string
	var port *int32
	err = via.QueryRow(ctx, "SELECT host(inet_server_addr()), inet_server_port()").Scan(&host, &port)
	if err != nil || host == nil || port == nil {
		// A Unix socket has no address: the connection already is the server's.
		return &pgServer{conn: via}, nil
	}
	_ = via.Close(ctx)
	pc.Host, pc.Port, pc.Fallbacks = *host, uint16(*port), nil
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL at %s:%d, the server behind %s: %w", *host, *port, cfg.Service.DSN, err)
	}
	return &pgServer{conn: conn}, nil
}

func (p *pgServer) close() { _ = p.conn.Close(context.Background()) }

// holderQuery lists the backends that hold advisory key $1.
const holderQuery = `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
	AND objsubid = 1 AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid`

// holders are the backends holding key's advisory lock.
func (p *pgServer) holders(t *suite, key string) []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	rows, err := p.conn.Query(ctx, holderQuery, AdvisoryKey(key))
	if err != nil {
		panic(caseErr{fmt.Sprintf("read %s's advisory lock from pg_locks: %v", key, err)})
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		panic(caseErr{fmt.Sprintf("read %s's advisory lock from pg_locks: %v", key, err)})
	}
	return pids
}

func (p *pgServer) holds(t *suite, key, _ string) {
	if pids := p.holders(t, key); len(pids) == 0 {
		panic(caseErr{fmt.Sprintf("no session holds the advisory lock %d of %s: the lock is not held (on PostgreSQL key K's lock is the advisory lock on K's FNV-1a hash shifted right by 2, docs/protocol.md)",
			AdvisoryKey(key), key)})
	}
}

func (p *pgServer) absent(t *suite, key, why string) {
	if pids := p.holders(t, key); len(pids) > 0 {
		panic(caseErr{fmt.Sprintf("backend %d still holds %s's advisory lock: %s", pids[0], key, why)})
	}
}

// ttls: an advisory lock has no expiry; the lease is the program's own.
func (p *pgServer) ttls(*suite, string) []time.Duration { return nil }

// drop: another session's advisory lock cannot be let go from here, only
// its session ended, which the program would see as a fault; every case
// takes fresh keys, so what one leaves held cannot touch the next.
func (p *pgServer) drop(*suite, string) {}

// fence checks that a fence is a number the fence sequence has handed out.
func (p *pgServer) fence(t *suite, key, tok string, fence int64) {
	p.holds(t, key, tok)
	if fence <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	var last int64
	if err := p.conn.QueryRow(ctx, "SELECT last_value FROM "+FenceSequence).Scan(&last); err != nil {
		panic(caseErr{fmt.Sprintf("read the sequence %s: %v", FenceSequence, err)})
	}
	if fence > last {
		panic(caseErr{fmt.Sprintf("fence %d is above %s's last value %d: on PostgreSQL the fence is nextval('%s') drawn in the granting statement (docs/protocol.md)",
			fence, FenceSequence, last, FenceSequence)})
	}
}

// lease: what a case asks; nothing on the server ends a grant by time.
func (p *pgServer) lease(_ *suite, d time.Duration) time.Duration { return d }

func (p *pgServer) extendSetsTTL() bool { return false }

func (p *pgServer) says(key string) (string, string) {
	return fmt.Sprintf("a session of the program holds the advisory lock %d", AdvisoryKey(key)), "the session still holds the advisory lock"
}

func (p *pgServer) cases(t *suite) []tcase {
	return []tcase{
		{"the holder's backend terminated", func() string { return p.sessionEnded(t) }},
		{"two processes: mutual exclusion", func() string { return twoProcesses(t) }},
	}
}

// sessionEnded is PostgreSQL's expiry: a session lock ends with its
// session, here by pg_terminate_backend, as an administrator, a
// statement_timeout's cousin idle_session_timeout, or a failover ends it.
// The grant is then lost: its extend and release must not say ok (an info
// while the program finds its connection dead proves nothing and is
// allowed, as long as a fail follows), and the program must take the key
// again on a new session.
func (p *pgServer) sessionEnded(t *suite) string {
	k, a := t.fresh(5 * time.Second)
	pids := p.holders(t, k)
	if len(pids) != 1 {
		panic(caseErr{fmt.Sprintf("%d backends hold %s's advisory lock after its grant, want 1", len(pids), k)})
	}
	p.mu.Lock()
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	_, err := p.conn.Exec(ctx, "SELECT pg_terminate_backend($1)", pids[0])
	cancel()
	p.mu.Unlock()
	if err != nil {
		panic(caseErr{fmt.Sprintf("pg_terminate_backend(%d): %v", pids[0], err)})
	}
	for deadline := time.Now().Add(5 * time.Second); len(p.holders(t, k)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			panic(caseErr{fmt.Sprintf("backend %d still holds %s's lock 5 s after pg_terminate_backend", pids[0], k)})
		}
	}
	var r Result
	var infos []string
	for deadline := time.Now().Add(t.opTimeout + 3*time.Second); ; time.Sleep(200 * time.Millisecond) {
		r = t.expectNot("extend of the grant whose session ended", history.OK, func(ctx context.Context) Result { return t.l.Extend(ctx, k, a, 5*time.Second) })
		if r.Outcome == history.Fail || time.Now().After(deadline) {
			break
		}
		infos = append(infos, fmt.Sprint(r.Err))
	}
	if r.Outcome != history.Fail {
		panic(caseErr{fmt.Sprintf("extend of the grant whose session ended still ended %s (%s), want fail: the server no longer holds it", r.Outcome, strings.Join(infos, "; "))})
	}
	t.absent(k, "an extend must not bring a lost grant back")
	b := NewToken()
	t.acquire("acquire after the session ended", k, b, 5*time.Second, history.OK)
	t.release("release of the lost grant", k, a, history.Fail)
	t.holds(k, b)
	t.release("release", k, b, history.OK)
	t.absent(k, "both grants ended")
	note := fmt.Sprintf("backend %d terminated: the grant's extend failed", pids[0])
	if NotHeld(r) {
		note += " with not_held"
	}
	if len(infos) > 0 {
		note += fmt.Sprintf(" after %d info", len(infos))
	}
	return note + "; the key was taken again on a new session"
}
