package resource

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// TestConcurrentWritersFencesIncrease: 64 writers race on one row with random,
// often repeated or stale fence numbers: each draws from a shared counter, as
// from INCR, then steps back a random 0-3 (a repeat is what a failover that lost
// INCRs hands out, a step back is a holder that paused). Whatever the interleaving, the accepted fences
// must rise strictly, nothing may pass at or below a number already accepted,
// and the log must hold every attempt the writers made, as they saw it.
func TestConcurrentWritersFencesIncrease(t *testing.T) {
	const (
		writers  = 64
		sections = 16 // critical sections per writer: read, then write value+1
	)
	for _, b := range allBackends {
		for _, mode := range []Mode{ModeWrite, ModeReadWrite} {
			t.Run(fmt.Sprintf("%s/%s", b.name, mode), func(t *testing.T) {
				_, c := startService(t, b.fresh(t, mode), "job-1")
				ctx := ctxT(t)

				type seen struct {
					op, token string
					fence     int64
					verdict   string
				}
				var (
					mu      sync.Mutex
					got     = map[seen]int{}
					wg      sync.WaitGroup
					counter atomic.Int64
				)
				errs := make(chan error, writers)
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(w), 42))
						for s := range sections {
							h := Holder{RunID: "job-1", Client: w, Process: w, Token: fmt.Sprintf("tok-%02d-%d", w, s), Fence: max(1, counter.Add(1)-rng.Int64N(4))}
							rr, err := c.Read(ctx, h)
							if err != nil {
								errs <- err
								return
							}
							mu.Lock()
							got[seen{OpRead, h.Token, h.Fence, rr.Verdict}]++
							mu.Unlock()
							if !rr.Accepted() {
								continue
							}
							wr, err := c.Write(ctx, h, rr.Value+1)
							if err != nil {
								errs <- err
								return
							}
							mu.Lock()
							got[seen{OpWrite, h.Token, h.Fence, wr.Verdict}]++
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatalf("writer: %v", err)
				}

				log, err := c.storeAttempts(ctx, "job-1")
				if err != nil {
					t.Fatal(err)
				}
				total := 0
				for _, n := range got {
					total += n
				}
				if len(log) != total {
					t.Fatalf("attempts log holds %d attempts, writers made %d", len(log), total)
				}
				for _, a := range log {
					k := seen{a.Op, a.Token, a.Fence, a.Verdict}
					if got[k] == 0 {
						t.Fatalf("log has %+v, which no writer saw", a)
					}
					got[k]--
				}

				var lastWrite, lastAny int64
				var lastToken string
				var value, accepted int64
				for _, a := range log {
					if a.Mode != string(mode) {
						t.Fatalf("attempt logged mode %q, service runs %q", a.Mode, mode)
					}
					if a.Verdict == history.Rejected {
						if a.Fence > a.LastFence || (a.Fence == a.LastFence && mode == ModeReadWrite && a.Token == lastToken) {
							t.Errorf("rejected %s fence %d (token %s) against last_fence %d: should have passed", a.Op, a.Fence, a.Token, a.LastFence)
						}
						if a.Reason == "" {
							t.Errorf("rejected %s fence %d without a reason", a.Op, a.Fence)
						}
						continue
					}
					if !mode.fenced(a.Op) {
						continue // a plain read in mode write
					}
					if a.LastFence != a.Fence {
						t.Errorf("accepted %s fence %d left last_fence %d", a.Op, a.Fence, a.LastFence)
					}
					if a.Fence < lastAny || (a.Fence == lastAny && a.Token != lastToken) {
						t.Errorf("accepted %s fence %d (token %s) at or below fence %d already seen (token %s)", a.Op, a.Fence, a.Token, lastAny, lastToken)
					}
					lastAny, lastToken = a.Fence, a.Token
					if a.Op == OpWrite {
						if a.Fence <= lastWrite {
							t.Errorf("accepted write fences not strictly increasing: %d after %d", a.Fence, lastWrite)
						}
						lastWrite, value = a.Fence, a.Value
						accepted++
					}
				}
				if accepted < 2 { // read-write lets few sections through 64-way contention, but not none
					t.Fatalf("only %d writes accepted; the test proves nothing", accepted)
				}
				row, err := c.Row(ctx, "job-1")
				if err != nil {
					t.Fatal(err)
				}
				if row.LastFence != lastAny || row.Value != value {
					t.Errorf("row value %d last_fence %d; log says value %d last_fence %d", row.Value, row.LastFence, value, lastAny)
				}
				t.Logf("%d attempts, %d writes accepted, last_fence %d", len(log), accepted, row.LastFence)
			})
		}
	}
}

// storeAttempts reads the log through the export endpoint, the way the runner
// collects resource.jsonl.
func (c *Client) storeAttempts(ctx context.Context, runID string) ([]history.Attempt, error) {
	var buf bytes.Buffer
	if _, err := c.ExportAttempts(ctx, &buf, runID); err != nil {
		return nil, err
	}
	return parseAttempts(buf.Bytes())
}
