package resource

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAcceptedWrites measures accepted fenced writes per second with 16
// concurrent writers (mode write, the Valkey 9 lock article's statement), each the holder of its
// own run with rising fences, so every write is accepted and the figure is the
// database's: the conditional UPDATE plus the attempts INSERT, one transaction
// each. "http" goes through the service on loopback as lock clients do;
// "embedded" calls the Store directly.
//
//	LOCKJEPSEN_PG_DSN=$(scripts/start-postgres.sh) go test ./resource -run '^$' -bench AcceptedWrites -benchtime 5s
func BenchmarkAcceptedWrites(b *testing.B) {
	const writers = 16
	runs := make([]string, writers)
	for i := range runs {
		runs[i] = fmt.Sprintf("bench-%02d", i)
	}
	for _, be := range allBackends {
		for _, via := range []string{"http", "embedded"} {
			b.Run(string(be.name)+"/"+via, func(b *testing.B) {
				cfg := be.fresh(b, ModeWrite)
				var r Resource
				if via == "http" {
					_, r = startService(b, cfg, runs...)
				} else {
					cfg.Runs = runs
					r = openStore(b, cfg)
				}
				ctx := ctxT(b)
				var (
					left atomic.Int64
					wg   sync.WaitGroup
					errs = make(chan error, writers)
				)
				left.Store(int64(b.N))
				b.ResetTimer()
				start := time.Now()
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						h := Holder{RunID: runs[w], Client: w, Process: w, Token: fmt.Sprintf("bench-token-%d", w)}
						for left.Add(-1) >= 0 {
							h.Fence++
							rep, err := r.Write(ctx, h, h.Fence)
							if err == nil && !rep.Accepted() {
								err = fmt.Errorf("write with fence %d rejected: %s", h.Fence, rep.Reason)
							}
							if err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
			})
		}
	}
}
