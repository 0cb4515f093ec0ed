package resource

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The database's own lease lock: one holder at a time, decided by one
// conditional UPDATE; extend and release only by the holder and only before
// the lease expires on the database's clock; the fence is the row's counter.
func TestLeaseSemantics(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b.name), func(t *testing.T) {
			cfg := b.fresh(t, ModeReadWrite)
			_, c := startService(t, cfg)
			ctx := ctxT(t)
			key := "lock:{job-1}"
			do := func(op, tok string, ttl time.Duration) LeaseReply {
				t.Helper()
				r, err := c.Lease(ctx, op, LeaseRequest{Key: key, Token: tok, TTLMs: ttl.Milliseconds()})
				if err != nil {
					t.Fatalf("%s by %s: %v", op, tok, err)
				}
				return r
			}
			a := do(LeaseAcquire, "A", 400*time.Millisecond)
			if !a.OK || a.Fence != 1 {
				t.Fatalf("first acquire: %+v, want granted with fence 1", a)
			}
			if r := do(LeaseAcquire, "B", time.Second); r.OK {
				t.Fatalf("B acquired a held lock: %+v", r)
			}
			if r := do(LeaseExtend, "B", time.Second); r.OK {
				t.Fatal("B extended A's lease")
			}
			if r := do(LeaseRelease, "B", 0); r.OK {
				t.Fatal("B released A's lease")
			}
			if r := do(LeaseExtend, "A", 400*time.Millisecond); !r.OK {
				t.Fatal("A could not extend its own lease")
			}
			time.Sleep(600 * time.Millisecond) // A's lease runs out on the database's clock
			if r := do(LeaseExtend, "A", time.Second); r.OK {
				t.Fatal("A extended an expired lease")
			}
			b2 := do(LeaseAcquire, "B", time.Second)
			if !b2.OK || b2.Fence != 2 {
				t.Fatalf("B after expiry: %+v, want granted with fence 2", b2)
			}
			if r := do(LeaseRelease, "A", 0); r.OK {
				t.Fatal("A released B's lease")
			}
			if r := do(LeaseRelease, "B", 0); !r.OK {
				t.Fatal("B could not release")
			}
			if r := do(LeaseAcquire, "C", time.Second); !r.OK || r.Fence != 3 {
				t.Fatalf("C after release: %+v, want fence 3", r)
			}
			// A restart keeps the holder and the counter.
			st := openStore(t, cfg)
			row, err := st.LeaseRow(ctx, key)
			if err != nil || row.Holder != "C" || row.Fence != 3 {
				t.Fatalf("after reopen: %+v %v, want holder C, fence 3", row, err)
			}
			if r, err := st.Lease(ctx, LeaseAcquire, LeaseRequest{Key: key, Token: "D", TTLMs: 1000}); err != nil || r.OK {
				t.Fatalf("D acquired C's lease after a reopen: %+v %v", r, err)
			}
			if _, err := c.Lease(ctx, LeaseAcquire, LeaseRequest{Key: key, Token: "E"}); err == nil {
				t.Fatal("acquire without ttl_ms accepted")
			}
		})
	}
}

// Many clients race for one lease, again and again: at most one holds it at a
// time (counted by the holders themselves) and every grant gets a new number.
func TestLeaseRaceOneHolder(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b.name), func(t *testing.T) {
			_, c := startService(t, b.fresh(t, ModeWrite))
			ctx := ctxT(t)
			var holding, grants atomic.Int64
			var mu sync.Mutex
			fences := map[int64]bool{}
			var wg sync.WaitGroup
			for w := 0; w < 12; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 30; i++ {
						tok := fmt.Sprintf("w%d-%d", w, i)
						r, err := c.Lease(ctx, LeaseAcquire, LeaseRequest{Key: "lock:{job-1}", Token: tok, TTLMs: 10_000})
						if err != nil {
							t.Error(err)
							return
						}
						if !r.OK {
							continue
						}
						if n := holding.Add(1); n != 1 {
							t.Errorf("%d holders at once", n)
						}
						mu.Lock()
						if fences[r.Fence] {
							t.Errorf("fence %d granted twice", r.Fence)
						}
						fences[r.Fence] = true
						mu.Unlock()
						grants.Add(1)
						holding.Add(-1)
						if rr, err := c.Lease(ctx, LeaseRelease, LeaseRequest{Key: "lock:{job-1}", Token: tok}); err != nil || !rr.OK {
							t.Errorf("release: %+v %v", rr, err)
						}
					}
				}()
			}
			wg.Wait()
			if grants.Load() < 12 {
				t.Fatalf("only %d grants in 360 tries", grants.Load())
			}
		})
	}
}
