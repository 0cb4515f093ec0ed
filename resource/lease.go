package resource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The database's own lease lock (recipe sql-lease): the lock is a row of the
// locks table in the same database as the data, taken, extended and released
// by conditional UPDATEs, so the database alone decides who holds it. Its
// fence is the row's own counter, raised by the UPDATE that grants the lock:
// a number issued by the database, in the same transaction as the grant.
//
// Time is the database's: PostgreSQL's clock_timestamp() (the server's
// clock, whoever asks), SQLite's is the clock of the one process that owns
// the file, this service. expires_at is milliseconds since the epoch on that
// clock.
//
// It has no failover story of its own: one database, one copy. Kill it and
// the lock is unavailable until it is back; nothing is granted twice,
// because the grant is committed before the reply (SQLite WAL, PostgreSQL
// WAL) and a lease the database has not seen expire is still held.

var leaseDDL = []string{`CREATE TABLE IF NOT EXISTS locks (
    lock_key   TEXT   PRIMARY KEY,
    holder     TEXT,
    expires_at BIGINT NOT NULL DEFAULT 0,
    fence      BIGINT NOT NULL DEFAULT 0
)`}

// {now} is the database's clock in milliseconds: an expression on
// PostgreSQL, a parameter (this process's clock) on SQLite.
const (
	stmtLeaseRow = `INSERT INTO locks (lock_key, holder, expires_at, fence) VALUES ($1, NULL, 0, 0)
ON CONFLICT (lock_key) DO NOTHING`
	stmtLeaseAcquire = `UPDATE locks SET holder = $2, expires_at = {now} + $3, fence = fence + 1
WHERE lock_key = $1 AND (holder IS NULL OR expires_at < {now})
RETURNING fence`
	stmtLeaseExtend = `UPDATE locks SET expires_at = {now} + $3
WHERE lock_key = $1 AND holder = $2 AND expires_at >= {now}
RETURNING fence`
	stmtLeaseRelease = `UPDATE locks SET holder = NULL, expires_at = 0
WHERE lock_key = $1 AND holder = $2 AND expires_at >= {now}
RETURNING fence`
	stmtLeaseState = `SELECT COALESCE(holder, ''), expires_at, fence FROM locks WHERE lock_key = $1`

	pgNowMs = `(extract(epoch from clock_timestamp()) * 1000)::bigint`
)

// leaseSQL fills in the database's clock: on PostgreSQL the server's, on
// SQLite this process's, passed as the last parameter.
func (s *Store) leaseSQL(stmt string, args ...any) (string, []any) {
	if s.backend == Postgres {
		return strings.ReplaceAll(stmt, "{now}", pgNowMs), args
	}
	n := fmt.Sprintf("$%d", len(args)+1)
	return strings.ReplaceAll(stmt, "{now}", n), append(args, time.Now().UnixMilli())
}

// LeaseRequest is the body of POST /v1/lease/{acquire,extend,release}.
type LeaseRequest struct {
	Key   string `json:"key"`              // the lock key, e.g. lock:{job-1}
	Token string `json:"token"`            // the holder's token
	TTLMs int64  `json:"ttl_ms,omitempty"` // acquire and extend
}

// LeaseReply answers a lease request. OK: granted, extended or released;
// false means the database said no (another holder, or the lease expired),
// which is a definite answer: nothing changed.
type LeaseReply struct {
	OK    bool  `json:"ok"`
	Fence int64 `json:"fence,omitempty"` // acquire: the row's counter after the grant
}

const (
	LeaseAcquire = "acquire"
	LeaseExtend  = "extend"
	LeaseRelease = "release"
)

func (q LeaseRequest) check(op string) error {
	switch {
	case q.Key == "":
		return badInput("key is missing: name the lock, e.g. \"key\": \"lock:{job-1}\"")
	case len(q.Key) > maxRunID:
		return badInput(fmt.Sprintf("key is %d bytes long; keep it under %d", len(q.Key), maxRunID))
	case q.Token == "":
		return badInput("token is missing: the lease belongs to one token; send it")
	case op != LeaseRelease && q.TTLMs <= 0:
		return badInput(fmt.Sprintf("ttl_ms %d: a %s needs the lease length in milliseconds, above 0", q.TTLMs, op))
	}
	return nil
}

// Lease runs one lease operation (LeaseAcquire, LeaseExtend, LeaseRelease) as
// one conditional UPDATE; 0 rows updated is a refusal.
func (s *Store) Lease(ctx context.Context, op string, q LeaseRequest) (LeaseReply, error) {
	if err := q.check(op); err != nil {
		return LeaseReply{}, err
	}
	var (
		stmt string
		args []any
	)
	switch op {
	case LeaseAcquire:
		stmt, args = s.leaseSQL(stmtLeaseAcquire, q.Key, q.Token, q.TTLMs)
	case LeaseExtend:
		stmt, args = s.leaseSQL(stmtLeaseExtend, q.Key, q.Token, q.TTLMs)
	case LeaseRelease:
		stmt, args = s.leaseSQL(stmtLeaseRelease, q.Key, q.Token)
	default:
		return LeaseReply{}, badInput(fmt.Sprintf("unknown lease operation %q: acquire, extend or release", op))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return LeaseReply{}, fmt.Errorf("resource: begin lease %s on %q: %w", op, q.Key, err)
	}
	defer tx.Rollback()
	if op == LeaseAcquire {
		if _, err := tx.ExecContext(ctx, stmtLeaseRow, q.Key); err != nil {
			return LeaseReply{}, fmt.Errorf("resource: lease row %q: %w", q.Key, err)
		}
	}
	var rep LeaseReply
	err = tx.QueryRowContext(ctx, stmt, args...).Scan(&rep.Fence)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		rep.Fence = 0
	case err != nil:
		return LeaseReply{}, fmt.Errorf("resource: lease %s on %q: %w", op, q.Key, err)
	default:
		rep.OK = true
		if op != LeaseAcquire {
			rep.Fence = 0
		}
	}
	if err := tx.Commit(); err != nil {
		return LeaseReply{}, fmt.Errorf("resource: commit lease %s on %q: %w", op, q.Key, err)
	}
	if op == LeaseAcquire && rep.OK {
		s.logf("lease %s granted to token %s for %d ms, fence %d (the lock row's counter)", q.Key, shortToken(q.Token), q.TTLMs, rep.Fence)
	}
	return rep, nil
}

// LeaseState is a lock row as stored, for tests and inspection.
type LeaseState struct {
	Holder    string
	ExpiresAt int64 // ms on the database's clock
	Fence     int64
}

// LeaseRow reads a lock row without changing it.
func (s *Store) LeaseRow(ctx context.Context, key string) (LeaseState, error) {
	var st LeaseState
	err := s.db.QueryRowContext(ctx, stmtLeaseState, key).Scan(&st.Holder, &st.ExpiresAt, &st.Fence)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	return st, err
}
