package workload

import (
	"context"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
)

// TestSetClockEndsHold: a client holding a long lease is told its clock jumped
// a minute ahead; by its own clock the lease is over, so it stops working at
// the next step and releases instead of after the 3 s job. Process ids after an info
// stay distinct per slot (checked in checkHistory's pairing).
func TestSetClockEndsHold(t *testing.T) {
	ctx := context.Background()
	base := ClientConfig{
		Lock: lock.Config{Recipe: lock.Native, Sentinels: sentinels, MasterSet: cluster.MasterName},
		Keys: []string{"lock:{skew}"}, TTLMs: 10000, RenewMs: 3000, ThinkMs: 100, Steps: 30, OpTimeoutMs: 1000, MaxCycles: 1,
	}
	c := startClients(t, ctx, 1, base)[0]
	var got []history.Event
	var okAt, releaseAt int64
	for e := range c.Events() {
		got = append(got, e)
		if e.F == history.FAcquire && e.Type == history.OK {
			okAt = e.Time
			if err := c.SetClock(time.Minute, 1); err != nil {
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
	if held := time.Duration(releaseAt - okAt); held > time.Second {
		t.Fatalf("held %v after its clock jumped past the lease end; want a prompt release", held)
	}
	for _, e := range got {
		if e.F == history.FExtend {
			t.Fatalf("extended after its clock said the lease was over: %+v", e)
		}
	}
}
