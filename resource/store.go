package resource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// Store is the database side of the resource. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	mode    Mode
	backend Backend
	where   string // for messages: file, or host:port/db
	schema  string

	log   io.Writer // issued fences and granted leases, one line each; nil: quiet
	logMu sync.Mutex
}

// Mode returns the fence rule in force.
func (s *Store) Mode() Mode { return s.mode }

// Backend returns the database kind.
func (s *Store) Backend() Backend { return s.backend }

// Where names the database: the SQLite file or PostgreSQL host:port/db.
func (s *Store) Where() string { return s.where }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// InitRun creates a run's row (value 0, last_fence 0) unless it exists; it
// reports whether it created it. An existing row is left alone, so that runners
// can init unconditionally and a restart keeps the data.
func (s *Store) InitRun(ctx context.Context, runID string) (bool, error) {
	if err := checkRunID(runID); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, stmtInitRun, runID)
	if err != nil {
		return false, fmt.Errorf("resource: init run %q: %w", runID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("resource: init run %q: %w", runID, err)
	}
	return n == 1, nil
}

// Row returns a run's state without logging an attempt: it is for inspection by
// runners and tests, not for critical sections.
func (s *Store) Row(ctx context.Context, runID string) (Row, error) {
	if err := checkRunID(runID); err != nil {
		return Row{}, err
	}
	return selectRow(ctx, s.db, runID)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func selectRow(ctx context.Context, q querier, runID string) (Row, error) {
	r := Row{RunID: runID}
	err := q.QueryRowContext(ctx, stmtSelectRow, runID).Scan(&r.Value, &r.Status, &r.LastFence, &r.LastToken)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return r, fmt.Errorf("%w %q: create it first (POST /v1/runs, serve --run %s, or Store.InitRun)", ErrUnknownRun, runID, runID)
	case err != nil:
		return r, fmt.Errorf("resource: read run %q: %w", runID, err)
	}
	return r, nil
}

// Read returns the run's value. In mode read-write it presents the fence and,
// when accepted, raises last_fence to it.
func (s *Store) Read(ctx context.Context, h Holder) (Reply, error) {
	return s.attempt(ctx, OpRead, h, 0)
}

// Write sets the run's value, presenting the fence in modes write and read-write.
func (s *Store) Write(ctx context.Context, h Holder, value int64) (Reply, error) {
	return s.attempt(ctx, OpWrite, h, value)
}

// decision is what one attempt came to, before it is logged.
type decision struct {
	accepted  bool
	value     int64
	lastFence int64
	reason    string
	time      int64 // true time of the decision
}

// attempt decides and logs in one transaction, so the log holds exactly the
// attempts that happened: a crash loses both or neither.
func (s *Store) attempt(ctx context.Context, op string, h Holder, value int64) (Reply, error) {
	if err := s.validate(op, h); err != nil {
		return Reply{}, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Reply{}, fmt.Errorf("resource: begin %s on %q: %w", op, h.RunID, err)
	}
	defer tx.Rollback() // no-op after Commit

	var d decision
	switch {
	case s.mode.fenced(op):
		d, err = s.checked(ctx, tx, op, h, value)
	case op == OpWrite:
		d, err = s.unchecked(ctx, tx, h, value)
	default:
		d, err = plainRead(ctx, tx, h)
	}
	if err != nil {
		return Reply{}, err
	}
	verdict := history.Rejected
	if d.accepted {
		verdict = history.Accepted
	}
	logged := d.value // a read logs the value it returned
	if op == OpWrite {
		logged = value // a write logs the value it asked for
	}
	if _, err := tx.ExecContext(ctx, stmtInsertAttempt, d.time, op, h.RunID, h.Client, h.Process,
		h.Token, h.Fence, logged, verdict, d.reason, d.lastFence, string(s.mode)); err != nil {
		return Reply{}, fmt.Errorf("resource: log %s attempt on %q: %w", op, h.RunID, err)
	}
	if err := tx.Commit(); err != nil {
		return Reply{}, fmt.Errorf("resource: commit %s on %q: %w", op, h.RunID, err)
	}
	return Reply{Verdict: verdict, Value: d.value, LastFence: d.lastFence, Reason: d.reason, Mode: s.mode}, nil
}

// checked runs the fence check: one conditional UPDATE, 0 rows = rejected.
func (s *Store) checked(ctx context.Context, tx *sql.Tx, op string, h Holder, value int64) (decision, error) {
	var (
		stmt string
		args []any
	)
	switch {
	case op == OpWrite && s.mode == ModeWrite:
		stmt, args = stmtWriteFenced, []any{value, h.Fence, h.Token, h.RunID}
	case op == OpWrite:
		stmt, args = stmtWriteSameHolder, []any{value, h.Fence, h.Token, h.RunID}
	default:
		stmt, args = stmtReadSameHolder, []any{h.Fence, h.Token, h.RunID}
	}
	var d decision
	err := tx.QueryRowContext(ctx, stmt, args...).Scan(&d.value, &d.lastFence)
	if err == nil {
		// Stamped while the UPDATE still holds the row lock, so accepted attempts on
		// one run are stamped in commit order.
		d.time, d.accepted = truetime.Now(), true
		return d, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("resource: fence check for %s on %q: %w", op, h.RunID, err)
	}
	// Rejected, or no such run: the row tells which, and why. last_fence only
	// grows, so the row read now explains the rejection correctly even if another
	// holder committed in between.
	row, err := selectRow(ctx, tx, h.RunID)
	if err != nil {
		return d, err
	}
	d.time = truetime.Now()
	d.value, d.lastFence = row.Value, row.LastFence
	d.reason = rejectReason(s.mode, h, row)
	return d, nil
}

// unchecked is mode none's write: it always lands.
func (s *Store) unchecked(ctx context.Context, tx *sql.Tx, h Holder, value int64) (decision, error) {
	// The row is read first (locked on PostgreSQL) only to word the note and to
	// keep last_fence at the highest number seen; nothing here can refuse.
	q := stmtSelectRow
	if s.backend == Postgres {
		q += " FOR UPDATE"
	}
	before := Row{RunID: h.RunID}
	err := tx.QueryRowContext(ctx, q, h.RunID).Scan(&before.Value, &before.Status, &before.LastFence, &before.LastToken)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = selectRow(ctx, tx, h.RunID) // same query, for the wording of the error
		return decision{}, err
	}
	if err != nil {
		return decision{}, fmt.Errorf("resource: read run %q before write: %w", h.RunID, err)
	}
	fence, token := before.LastFence, before.LastToken
	if h.Fence >= fence {
		fence, token = h.Fence, h.Token
	}
	d := decision{accepted: true}
	if err := tx.QueryRowContext(ctx, stmtWriteUnfenced, value, fence, token, h.RunID).Scan(&d.value, &d.lastFence); err != nil {
		return d, fmt.Errorf("resource: write %q: %w", h.RunID, err)
	}
	d.time = truetime.Now()
	d.reason = unfencedNote(h, before)
	return d, nil
}

// plainRead is a read that presents no fence (modes none and write).
func plainRead(ctx context.Context, tx *sql.Tx, h Holder) (decision, error) {
	row, err := selectRow(ctx, tx, h.RunID)
	if err != nil {
		return decision{}, err
	}
	return decision{accepted: true, value: row.Value, lastFence: row.LastFence, time: truetime.Now()}, nil
}
