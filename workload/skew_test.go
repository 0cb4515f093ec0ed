package workload

import (
	"context"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
)

// TestSetClockEndsHold: a client holding a long lease is told its clock jumped
// a minute ahead; by its own clock the lease is over, so it stops working at
// the next step and releases instead of after the 3 s job. Process ids after an info
// stay distinct per slot (checked in checkHistory's pairing).
func TestSetClockEndsHold(t *testing.T) {
	base := ClientConfig{
		Lock: lock.Config{Recipe: lock.Native, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName}},
		Keys: []string{"lock:{skew}"}, TTLMs: 10000, RenewMs: 3000, ThinkMs: 100, Steps: 30, OpTimeoutMs: 1000, MaxCycles: 1,
	}
	got, okAt, releaseAt := oneHold(t, base, func(c *Client) error { return c.SetClock(time.Minute, 1) })
	if held := time.Duration(releaseAt - okAt); held > time.Second {
		t.Fatalf("held %v after its clock jumped past the lease end; want a prompt release", held)
	}
	for _, e := range got {
		if e.F == history.FExtend {
			t.Fatalf("extended after its clock said the lease was over: %+v", e)
		}
	}
}

// TestStarveRenewalsStallsWatchdog: a holder whose watchdog is starved for
// 2 s sends no extend and does not notice its 1 s lease ending; its job goes
// on until the watchdog wakes, finds the lease over and ends the hold, well
// before the 3 s job would have ended with a watchdog that renewed.
func TestStarveRenewalsStallsWatchdog(t *testing.T) {
	base := ClientConfig{
		Lock: lock.Config{Recipe: lock.Native, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName}},
		Keys: []string{"lock:{starve}"}, TTLMs: 1000, RenewMs: 300, ThinkMs: 100, Steps: 30, OpTimeoutMs: 1000, MaxCycles: 1,
	}
	got, okAt, releaseAt := oneHold(t, base, func(c *Client) error { return c.StarveRenewals(2 * time.Second) })
	for _, e := range got {
		if e.F == history.FExtend {
			t.Fatalf("extended while its watchdog was starved: %+v", e)
		}
	}
	held := time.Duration(releaseAt - okAt)
	if held < 1500*time.Millisecond {
		t.Fatalf("released %v after the grant: a starved watchdog cannot end the hold at the 1 s lease's end", held)
	}
	if held > 2900*time.Millisecond {
		t.Fatalf("released %v after the grant: the watchdog, awake at 2 s, should have ended the hold on a lease long over", held)
	}
}

// oneHold runs one client for one cycle, calls atGrant as its acquire's ok
// arrives, and returns its events with the grant's and the release's times.
func oneHold(t *testing.T, base ClientConfig, atGrant func(*Client) error) (got []history.Event, okAt, releaseAt int64) {
	t.Helper()
	c := startClients(t, context.Background(), 1, base)[0]
	for e := range c.Events() {
		got = append(got, e)
		if e.F == history.FAcquire && e.Type == history.OK {
			okAt = e.Time
			if err := atGrant(c); err != nil {
				t.Fatal(err)
			}
		}
		if e.F == history.FRelease && e.Type == history.Invoke {
			releaseAt = e.Time
		}
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if okAt == 0 || releaseAt == 0 {
		t.Fatalf("no acquire/release in %+v", got)
	}
	return got, okAt, releaseAt
}
