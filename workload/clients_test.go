package workload

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/resource"
)

// TestTenClientsOneKey: ten client processes contend for one key for 20 s with
// no faults, through the fenced resource. The merged history must be
// well-formed, every operation must have exactly one outcome, and no two
// clients' holds may overlap.
func TestTenClientsOneKey(t *testing.T) {
	ctx := context.Background()
	const key = "lock:{job-1}"
	st, err := resource.Open(ctx, resource.Config{Path: filepath.Join(t.TempDir(), "res.db"),
		Mode: resource.ModeReadWrite, Runs: []string{RunID(key)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(resource.NewServer(st).Handler())
	t.Cleanup(srv.Close)

	base := ClientConfig{
		Lock: lock.Config{Recipe: lock.Native, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName}, Fencing: true},
		Keys: []string{key}, TTLMs: 2000, RenewMs: 300, ThinkMs: 30, PauseMs: 5, OpTimeoutMs: 1000,
		ResourceAddr: srv.URL,
	}
	clients := startClients(t, ctx, 10, base)

	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var last sync.Map // slot → last event
	for _, c := range clients {
		wg.Add(1)
		go func(c *Client) {
			defer wg.Done()
			for e := range c.Events() {
				if _, err := w.Write(e); err != nil {
					t.Error(err)
				}
				last.Store(c.Slot(), e)
			}
		}(c)
	}
	time.Sleep(20 * time.Second)
	for _, c := range clients {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	for _, c := range clients {
		if err := c.Wait(); err != nil {
			t.Errorf("client exit: %v", err)
		}
		// A stopped client ends released: its last event closes a release or
		// a refused acquire.
		v, _ := last.Load(c.Slot())
		if e, _ := v.(history.Event); e.Type == history.Invoke || (e.F != history.FRelease && !(e.F == history.FAcquire && e.Type == history.Fail)) {
			t.Errorf("client %d stopped after %s %s, not after a release", c.Slot(), e.F, e.Type)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(path)
	if err != nil {
		t.Fatalf("history does not read back: %v", err)
	}
	checkHistory(t, events, true, 20)
	row, err := st.Row(ctx, RunID(key))
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, e := range events {
		if e.F == history.FWrite && e.Type == history.OK {
			writes++
		}
	}
	if row.Value != int64(writes) {
		t.Errorf("resource value %d after %d accepted writes: an update was lost", row.Value, writes)
	}
	t.Logf("%d events, %d accepted writes, final value %d, last fence %d", len(events), writes, row.Value, row.LastFence)
}

type opKey struct {
	p     history.Process
	lane  string // lock ops and resource ops may overlap in time (renewal during the section)
	token string
}

func lane(f string) string {
	if f == history.FRead || f == history.FWrite {
		return "resource"
	}
	return "lock"
}

func checkHistory(t *testing.T, events []history.Event, fenced bool, minOK int) {
	t.Helper()
	open := map[opKey]history.Event{}
	count := map[history.Type]int{}
	type interval struct {
		from, to int64
		client   int
		token    string
	}
	var holds []interval
	held := map[string]int64{} // token → acquire ok time
	// leaseEnd is when each token's lease ended by the client's own count:
	// an ok acquire's or extend's invoke + TTL. A hold ends there even if
	// the release comes later: a client process starved of CPU on a loaded
	// host (ten of them beside other tests) can get its acquire's ok after
	// the server's TTL already ran, and the release of a lock that expired
	// is then refused, rightly. Such holds are counted, not overlapped.
	leaseEnd := map[string]int64{}
	late := 0
	for _, e := range events {
		if !e.IsClient() {
			continue
		}
		k := opKey{e.Process, lane(e.F), ""}
		if e.Type == history.Invoke {
			if prev, busy := open[k]; busy {
				t.Fatalf("process %d invoked %s while %s was in flight", e.Process, e.F, prev.F)
			}
			open[k] = e
			continue
		}
		inv, found := open[k]
		if !found || inv.F != e.F || inv.Token != e.Token {
			t.Fatalf("%s %s of process %d matches no invoke (open: %+v)", e.F, e.Type, e.Process, inv)
		}
		delete(open, k)
		if e.F == history.FAcquire {
			count[e.Type]++
		}
		switch {
		case e.F == history.FAcquire && e.Type == history.OK:
			if fenced && e.Fence <= 0 {
				t.Errorf("ok fenced acquire without a fence")
			}
			held[e.Token] = e.Time
			leaseEnd[e.Token] = inv.Time + inv.TTLMs*1e6
		case e.F == history.FExtend && e.Type == history.OK:
			leaseEnd[e.Token] = max(leaseEnd[e.Token], inv.Time+inv.TTLMs*1e6)
		case e.F == history.FRelease:
			from, was := held[e.Token]
			if !was {
				continue
			}
			delete(held, e.Token)
			to := min(inv.Time, leaseEnd[e.Token])
			if inv.Time > leaseEnd[e.Token] {
				late++
			} else if e.Type != history.OK {
				t.Errorf("release of a held lock ended %s: %s", e.Type, e.Error)
			}
			if to > from {
				holds = append(holds, interval{from, to, e.Client, e.Token})
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("%d operations never completed: %v", len(open), open)
	}
	if count[history.Info] > 0 {
		t.Errorf("%d acquires with unknown outcome in a run without faults", count[history.Info])
	}
	if count[history.OK] < minOK {
		t.Errorf("only %d acquires granted, want >= %d", count[history.OK], minOK)
	}
	sort.Slice(holds, func(i, j int) bool { return holds[i].from < holds[j].from })
	for i := 1; i < len(holds); i++ {
		if holds[i].from < holds[i-1].to {
			t.Errorf("clients %d and %d held the lock at once: [%d,%d] and [%d,%d]",
				holds[i-1].client, holds[i].client, holds[i-1].from, holds[i-1].to, holds[i].from, holds[i].to)
		}
	}
	t.Logf("acquires: %d ok, %d fail; %d holds; %d releases after the client's own lease ran out (a starved process)", count[history.OK], count[history.Fail], len(holds), late)
}

// TestLibraryRecipesInClients runs redsync, valkeylock and redislock through the client
// loop: three processes, one key, a few seconds, jobs longer than the TTL so
// that renewals (ours for redsync, the library's own for valkeylock) matter.
func TestLibraryRecipesInClients(t *testing.T) {
	for _, recipe := range []string{lock.Redsync, lock.Valkeylock, lock.Redislock} {
		t.Run(recipe, func(t *testing.T) {
			ctx := context.Background()
			base := ClientConfig{
				Lock: lock.Config{Recipe: recipe, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName}},
				Keys: []string{"lock:{lib-" + recipe + "}"}, TTLMs: 600, RenewMs: 200, ThinkMs: 900, PauseMs: 20, OpTimeoutMs: 1000,
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
			time.Sleep(4 * time.Second)
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
			checkHistory(t, events, false, 2)
			extends := 0
			for _, e := range events {
				if e.F == history.FExtend && e.Type == history.OK {
					extends++
				}
			}
			if extends == 0 {
				t.Errorf("no ok extends recorded for jobs longer than the TTL")
			}
		})
	}
}
