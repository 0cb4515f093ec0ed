package resource

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lockjepsen/lockjepsen/history"
)

// Attempts returns the attempts log of one run (all runs when runID is empty),
// in true-time order.
func (s *Store) Attempts(ctx context.Context, runID string) ([]history.Attempt, error) {
	var out []history.Attempt
	err := s.eachAttempt(ctx, runID, func(a *history.Attempt) error {
		out = append(out, *a)
		return nil
	})
	return out, err
}

// ExportAttempts writes the attempts log as JSON lines (resource.jsonl, one
// history.Attempt per line) and returns how many it wrote.
func (s *Store) ExportAttempts(ctx context.Context, w io.Writer, runID string) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // reasons contain "—" and "<"; keep them readable
	n := 0
	err := s.eachAttempt(ctx, runID, func(a *history.Attempt) error {
		n++
		return enc.Encode(a)
	})
	if err != nil {
		return n, err
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("resource: write attempts: %w", err)
	}
	return n, nil
}

func (s *Store) eachAttempt(ctx context.Context, runID string, fn func(*history.Attempt) error) error {
	rows, err := s.db.QueryContext(ctx, stmtSelectAttempts, runID)
	if err != nil {
		return fmt.Errorf("resource: query attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a    history.Attempt
			mode string
		)
		if err := rows.Scan(&a.Time, &a.Op, &a.RunID, &a.Client, &a.Process, &a.Token, &a.Fence,
			&a.Value, &a.Verdict, &a.Reason, &a.LastFence, &mode); err != nil {
			return fmt.Errorf("resource: scan attempt: %w", err)
		}
		a.Mode = mode
		if err := fn(&a); err != nil {
			return fmt.Errorf("resource: export attempt: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("resource: read attempts: %w", err)
	}
	return nil
}
