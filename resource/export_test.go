package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// parseAttempts reads resource.jsonl strictly: every line one history.Attempt,
// no unknown fields, true time set.
func parseAttempts(b []byte) ([]history.Attempt, error) {
	var out []history.Attempt
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var a history.Attempt
		if err := dec.Decode(&a); err != nil {
			return nil, fmt.Errorf("resource.jsonl line %d: %v: %s", i+1, err, line)
		}
		if a.Time <= 0 {
			return nil, fmt.Errorf("resource.jsonl line %d: no true time: %s", i+1, line)
		}
		if i > 0 && a.Time < out[len(out)-1].Time {
			return nil, fmt.Errorf("resource.jsonl line %d: time goes backwards", i+1)
		}
		out = append(out, a)
	}
	return out, nil
}

// TestExportSameFromStoreAndService: the CLI exports from the database, the
// runner may export over HTTP; both must give the same lines.
func TestExportSameFromStoreAndService(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b.name), func(t *testing.T) {
			svc, c := startService(t, b.fresh(t, ModeReadWrite), "job-1", "job-2")
			ctx := ctxT(t)
			for i, run := range []string{"job-1", "job-2", "job-1"} {
				h := Holder{RunID: run, Client: i, Process: i, Token: fmt.Sprintf("t%d", i), Fence: int64(10 + i)}
				if _, err := c.Read(ctx, h); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Write(ctx, h, int64(i)); err != nil {
					t.Fatal(err)
				}
			}
			var viaHTTP, viaStore bytes.Buffer
			if _, err := c.ExportAttempts(ctx, &viaHTTP, ""); err != nil {
				t.Fatal(err)
			}
			n, err := svc.Store.ExportAttempts(ctx, &viaStore, "")
			if err != nil {
				t.Fatal(err)
			}
			if n != 6 || viaHTTP.String() != viaStore.String() {
				t.Fatalf("store exported %d lines:\n%s\nservice:\n%s", n, viaStore.String(), viaHTTP.String())
			}
			list, err := parseAttempts(viaStore.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			one, err := svc.Store.Attempts(ctx, "job-1")
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 6 || len(one) != 4 {
				t.Fatalf("all runs: %d attempts (want 6); job-1: %d (want 4)", len(list), len(one))
			}
			first := list[0]
			want := history.Attempt{Time: first.Time, Op: OpRead, RunID: "job-1", Client: 0, Process: 0, Token: "t0", Fence: 10,
				Value: 0, Verdict: history.Accepted, LastFence: 10, Mode: string(ModeReadWrite)}
			if first != want {
				t.Fatalf("first attempt\n got %+v\nwant %+v", first, want)
			}
		})
	}
}
