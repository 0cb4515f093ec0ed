package workload

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/resource"
)

// --fence-source resource with a library recipe that cannot INCR with its SET
// NX (redsync), and the sql-lease recipe, whose lock is a row of the
// resource's database: every hold asks the resource for its number as an
// operation of its own (f fence), presents that number, and the numbers only
// grow.
func TestFenceFromResourceInClients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lock   lock.Config
		source string
	}{
		{"redsync+resource", lock.Config{Recipe: lock.Redsync, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName}}, history.FenceResource},
		{"sql-lease", lock.Config{Recipe: lock.SQLLease, Fencing: true}, history.FenceLeaseRow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			key := "lock:{fs-" + tc.lock.Recipe + "}"
			st, err := resource.Open(ctx, resource.Config{Path: filepath.Join(t.TempDir(), "res.db"),
				Mode: resource.ModeReadWrite, Runs: []string{RunID(key)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			srv := httptest.NewServer(resource.NewServer(st).Handler())
			t.Cleanup(srv.Close)
			lc := tc.lock
			if lc.Recipe == lock.SQLLease {
				lc.Resource = srv.URL
			}
			base := ClientConfig{Lock: lc, Keys: []string{key}, TTLMs: 1000, RenewMs: 300, ThinkMs: 20, Steps: 3,
				PauseMs: 5, OpTimeoutMs: 1000, ResourceAddr: srv.URL}
			if tc.source == history.FenceResource {
				base.FenceSource = history.FenceResource
			}
			clients := startClients(t, ctx, 3, base)
			var mu sync.Mutex
			var events []history.Event
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Add(1)
				go func(c *Client) {
					defer wg.Done()
					for e := range c.Events() {
						mu.Lock()
						events = append(events, e)
						mu.Unlock()
					}
				}(c)
			}
			time.Sleep(3 * time.Second)
			for _, c := range clients {
				_ = c.Stop()
			}
			wg.Wait()
			for _, c := range clients {
				if err := c.Wait(); err != nil {
					t.Errorf("client exit: %v", err)
				}
			}
			history.Sort(events)
			for i := range events {
				if err := history.Validate(&events[i]); err != nil {
					t.Fatalf("event %+v: %v", events[i], err)
				}
			}
			fenceOf := map[string]int64{}
			seen := map[int64]bool{}
			grants, accepted := 0, 0
			for _, e := range events {
				switch {
				case e.Type != history.OK:
				case e.F == history.FAcquire && tc.source == history.FenceResource:
					if e.Fence != 0 {
						t.Fatalf("acquire ok with fence %d: the lock draws no number here", e.Fence)
					}
				case e.F == history.FAcquire, e.F == history.FFence:
					// Issued in grant order; events from different processes are
					// stamped after the reply, so only uniqueness is exact here.
					if e.FenceSource != tc.source || e.Fence <= 0 || seen[e.Fence] {
						t.Fatalf("%s ok: fence %d from %q: want a new number from %s", e.F, e.Fence, e.FenceSource, tc.source)
					}
					seen[e.Fence], fenceOf[e.Token] = true, e.Fence
					grants++
				case e.F == history.FWrite:
					accepted++
				}
			}
			for _, e := range events {
				if (e.F == history.FRead || e.F == history.FWrite) && e.Type == history.Invoke && e.Fence != fenceOf[e.Token] {
					t.Fatalf("%s presents fence %d, the hold's number is %d", e.F, e.Fence, fenceOf[e.Token])
				}
			}
			if grants < 3 || accepted < 3 {
				t.Fatalf("%d numbers issued, %d writes accepted: too little work", grants, accepted)
			}
		})
	}
}
