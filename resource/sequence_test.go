package resource

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The database's own sequence: every number issued once, strictly increasing
// in issue order, logged in the fences table, and still increasing after the
// store is closed and reopened (a restart), over HTTP and embedded.
func TestFenceSequenceIssuesIncreasingNumbers(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b.name), func(t *testing.T) {
			cfg := b.fresh(t, ModeReadWrite)
			_, c := startService(t, cfg, "job-1", "job-2")
			ctx := ctxT(t)
			const writers, each = 16, 20
			var mu sync.Mutex
			var got []int64
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					last := int64(0)
					for i := 0; i < each; i++ {
						h := Holder{RunID: fmt.Sprintf("job-%d", 1+w%2), Client: w, Process: w, Token: fmt.Sprintf("tok-%d-%d", w, i)}
						r, err := c.Fence(ctx, h)
						if err != nil {
							t.Error(err)
							return
						}
						if r.Fence <= last {
							t.Errorf("writer %d: fence %d after its own %d: the sequence went backwards", w, r.Fence, last)
						}
						if r.Source != string(b.name)+" sequence" {
							t.Errorf("source %q", r.Source)
						}
						last = r.Fence
						mu.Lock()
						got = append(got, r.Fence)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
			for i := 1; i < len(got); i++ {
				if got[i] == got[i-1] {
					t.Fatalf("fence %d issued twice", got[i])
				}
			}
			if len(got) != writers*each {
				t.Fatalf("%d numbers, want %d", len(got), writers*each)
			}
			// A restart: the store reopened on the same database continues above.
			st := openStore(t, cfg)
			log, err := st.Fences(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != len(got) || log[len(log)-1].Fence != got[len(got)-1] {
				t.Fatalf("fences table holds %d numbers (last %d), want %d (last %d)", len(log), log[len(log)-1].Fence, len(got), got[len(got)-1])
			}
			r, err := st.Fence(ctx, Holder{RunID: "job-1", Token: "after-restart"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Fence <= got[len(got)-1] {
				t.Fatalf("after a reopen: fence %d, not above %d", r.Fence, got[len(got)-1])
			}
			// The number is presented as any other: a read-write section with it
			// passes, an older number is then turned away.
			h := Holder{RunID: "job-1", Client: 0, Process: 0, Token: "after-restart", Fence: r.Fence}
			if rep, err := st.Read(ctx, h); err != nil || !rep.Accepted() {
				t.Fatalf("read with the issued number: %+v %v", rep, err)
			}
			old := Holder{RunID: "job-1", Client: 1, Process: 1, Token: "older", Fence: got[0]}
			if rep, err := st.Write(ctx, old, 1); err != nil || rep.Accepted() {
				t.Fatalf("write with an older number: %+v %v", rep, err)
			}
		})
	}
}

func TestFenceBadInput(t *testing.T) {
	svc, c := startService(t, freshSQLite(t, ModeWrite), "job-1")
	ctx := ctxT(t)
	var in *InputError
	if _, err := c.Fence(ctx, Holder{RunID: "job-1", Client: 0, Process: 0}); !errors.As(err, &in) {
		t.Fatalf("no token: %v, want an input error", err)
	}
	if _, err := c.Fence(ctx, Holder{RunID: "job-9", Client: 0, Process: 0, Token: "t"}); !errors.Is(err, ErrUnknownRun) {
		t.Fatalf("unknown run: %v, want ErrUnknownRun", err)
	}
	resp, err := http.Post("http://"+svc.Addr()+"/v1/fence", "application/json",
		strings.NewReader(`{"run_id":"job-1","client":0,"process":0,"token":"t","fence":5}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a fence in the request: status %d, want 400", resp.StatusCode)
	}
}
