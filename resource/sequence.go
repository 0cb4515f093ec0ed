package resource

import (
	"context"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/truetime"
)

// A fence number issued by the database itself, in the same database as the
// data (--fence-source resource). The Valkey 9 lock article's remark, made real: "if
// the resource is a database, its own sequence or a version column is a
// stronger source for the number". A counter on Valkey goes backwards when a
// failover loses its INCRs; a database sequence does not, so the holder the
// lock service granted last always carries the higher number.
//
// The sequence is one per database, shared by every run: a fence only has to
// grow per row, and one counter that grows for all rows does. Every issuance
// is a row of the fences table (the numbers are its key), written in the same
// statement that draws the number, so the database holds the log of who got
// which number and when.

// fenceDDL is the sequence and its log. SQLite has no SEQUENCE: an
// AUTOINCREMENT key never reuses a number, not even after a delete or a
// crash (sqlite_sequence is updated in the same transaction). PostgreSQL draws
// from a real SEQUENCE with nextval, which is never rolled back and, after a
// crash, resumes past every number it may have handed out.
var fenceDDL = map[Backend][]string{
	SQLite: {`CREATE TABLE IF NOT EXISTS fences (
    fence     INTEGER PRIMARY KEY AUTOINCREMENT,
    true_time BIGINT  NOT NULL,
    run_id    TEXT    NOT NULL,
    client    INTEGER NOT NULL,
    process   INTEGER NOT NULL,
    token     TEXT    NOT NULL
)`},
	Postgres: {`CREATE SEQUENCE IF NOT EXISTS fence_seq`, `CREATE TABLE IF NOT EXISTS fences (
    fence     BIGINT  PRIMARY KEY DEFAULT nextval('fence_seq'),
    true_time BIGINT  NOT NULL,
    run_id    TEXT    NOT NULL,
    client    INTEGER NOT NULL,
    process   INTEGER NOT NULL,
    token     TEXT    NOT NULL
)`},
}

const stmtIssueFence = `INSERT INTO fences (true_time, run_id, client, process, token)
VALUES ($1, $2, $3, $4, $5) RETURNING fence`

// FenceReply answers POST /v1/fence.
type FenceReply struct {
	Fence  int64  `json:"fence"`
	Source string `json:"source"` // "sqlite sequence" or "postgres sequence"
}

// Fencer issues fence numbers; Store and Client implement it.
type Fencer interface {
	Fence(ctx context.Context, h Holder) (FenceReply, error)
}

var (
	_ Fencer = (*Store)(nil)
	_ Fencer = (*Client)(nil)
)

// Fence issues the next number of the database's own sequence to h (its run,
// client, process and token; h.Fence is ignored). The run must exist. A holder
// asks right after its grant and presents the number to Read and Write exactly
// as it would a number drawn from Valkey.
func (s *Store) Fence(ctx context.Context, h Holder) (FenceReply, error) {
	if err := checkRunID(h.RunID); err != nil {
		return FenceReply{}, err
	}
	if h.Client < 0 || h.Process < 0 {
		return FenceReply{}, badInput(fmt.Sprintf("client %d / process %d: both must be 0 or more", h.Client, h.Process))
	}
	if h.Token == "" {
		return FenceReply{}, badInput("token is missing: a fence number is issued to one lock holder; send its lock token")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return FenceReply{}, fmt.Errorf("resource: begin fence for %q: %w", h.RunID, err)
	}
	defer tx.Rollback()
	if _, err := selectRow(ctx, tx, h.RunID); err != nil {
		return FenceReply{}, err
	}
	var f int64
	if err := tx.QueryRowContext(ctx, stmtIssueFence, truetime.Now(), h.RunID, h.Client, h.Process, h.Token).Scan(&f); err != nil {
		return FenceReply{}, fmt.Errorf("resource: issue fence for %q: %w", h.RunID, err)
	}
	if err := tx.Commit(); err != nil {
		return FenceReply{}, fmt.Errorf("resource: commit fence for %q: %w", h.RunID, err)
	}
	src := string(s.backend) + " sequence"
	s.logf("fence %d issued by the %s to client %d (process %d, token %s) for %s", f, src, h.Client, h.Process, shortToken(h.Token), h.RunID)
	return FenceReply{Fence: f, Source: src}, nil
}

// FenceLog is one issued number, as the fences table records it.
type FenceLog struct {
	Fence    int64  `json:"fence"`
	TrueTime int64  `json:"time"`
	RunID    string `json:"run_id"`
	Client   int    `json:"client"`
	Process  int    `json:"process"`
	Token    string `json:"token"`
}

// Fences lists the issued numbers in issue order.
func (s *Store) Fences(ctx context.Context) ([]FenceLog, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT fence, true_time, run_id, client, process, token FROM fences ORDER BY fence`)
	if err != nil {
		return nil, fmt.Errorf("resource: query fences: %w", err)
	}
	defer rows.Close()
	var out []FenceLog
	for rows.Next() {
		var f FenceLog
		if err := rows.Scan(&f.Fence, &f.TrueTime, &f.RunID, &f.Client, &f.Process, &f.Token); err != nil {
			return nil, fmt.Errorf("resource: scan fence: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *Store) logf(format string, a ...any) {
	if s.log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, a...)...)
}

func (s *Store) migrateExtra(ctx context.Context) error {
	for _, ddl := range [][]string{fenceDDL[s.backend], leaseDDL} {
		for _, stmt := range ddl {
			if _, err := s.db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("resource: create fence sequence and lease table on %s %s: %w", s.backend, s.where, err)
			}
		}
	}
	return nil
}
