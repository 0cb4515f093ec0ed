package runner

import (
	"context"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// TestAwaitGrantEndsAtTheGuardsRefusal feeds the tracker acquires as the
// clients' pipes deliver them and checks where a fault's wait for a grant
// ends: at a grant, at the first refusal by the replication guard for one of
// the reasons the fault named, and nowhere else (contention, a dead or
// demoted primary, a refusal of an acquire sent before the wait began).
func TestAwaitGrantEndsAtTheGuardsRefusal(t *testing.T) {
	const after = 1000
	alone := []string{nemesis.GuardNoReplicas, nemesis.GuardWait, nemesis.GuardWaitAOF}
	window := []string{nemesis.GuardWait, nemesis.GuardWaitAOF}
	type acq struct {
		client         int
		invoked, ended int64
		typ            history.Type
		err            string
	}
	noreplicas := "MULTI fenced acquire, command 1: NOREPLICAS Not enough good replicas to write."
	wait := "WAIT 1 100: 0 replica(s) acknowledged; lock released"
	for _, tc := range []struct {
		name        string
		closing     []string
		acquires    []acq
		wantGranted bool
		wantReason  string // "" : no refusal ends the wait
		wantClient  int
	}{
		{name: "NOREPLICAS on the primary alone", closing: alone,
			acquires:   []acq{{1, 1100, 1101, history.Fail, noreplicas}},
			wantReason: nemesis.GuardNoReplicas, wantClient: 1},
		{name: "a WAIT short of acknowledgements", closing: alone,
			acquires:   []acq{{2, 1100, 1200, history.Fail, wait}},
			wantReason: nemesis.GuardWait, wantClient: 2},
		{name: "WAITAOF in a resync window", closing: window,
			acquires:   []acq{{3, 1100, 1200, history.Fail, "WAITAOF 1 1 100: fsynced locally 1, by 0 replica(s); lock released"}},
			wantReason: nemesis.GuardWaitAOF, wantClient: 3},
		{name: "NOREPLICAS does not close a resync window", closing: window,
			acquires: []acq{{1, 1100, 1101, history.Fail, noreplicas}}},
		{name: "contention is the lock working", closing: alone,
			acquires: []acq{{1, 1100, 1101, history.Fail, "SET NX PX returned nil: another client holds the lock"}}},
		{name: "a demoted primary is the fault's cost", closing: alone,
			acquires: []acq{{1, 1100, 1101, history.Fail, "READONLY You can't write against a read only replica."}}},
		{name: "a refusal of an acquire sent before the wait", closing: alone,
			acquires: []acq{{1, 900, 1101, history.Fail, wait}}},
		{name: "AwaitAcquire's wait ends at no refusal", closing: nil,
			acquires: []acq{{1, 1100, 1101, history.Fail, noreplicas}}},
		{name: "the earliest refusal, whatever the arrival order", closing: alone,
			acquires:   []acq{{4, 1300, 1400, history.Fail, wait}, {5, 1100, 1150, history.Fail, noreplicas}},
			wantReason: nemesis.GuardNoReplicas, wantClient: 5},
		{name: "a grant wins over a refusal", closing: alone,
			acquires:    []acq{{1, 1100, 1101, history.Fail, noreplicas}, {2, 1100, 1102, history.OK, ""}},
			wantGranted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker(6 * time.Second)
			for _, a := range tc.acquires {
				p := history.Process(a.client)
				tr.observe(history.Event{Time: a.invoked, Process: p, Client: a.client, Type: history.Invoke, F: history.FAcquire, Key: "lock:{job-1}", Token: "t"})
				tr.observe(history.Event{Time: a.ended, Process: p, Client: a.client, Type: a.typ, F: history.FAcquire, Key: "lock:{job-1}", Token: "t", Error: a.err})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			granted, r := tr.awaitGrant(ctx, after, tc.closing)
			if granted != tc.wantGranted {
				t.Errorf("granted %v, want %v", granted, tc.wantGranted)
			}
			switch {
			case tc.wantReason == "" && r != nil:
				t.Errorf("the wait ended at %+v, want no refusal to end it", *r)
			case tc.wantReason != "" && r == nil:
				t.Errorf("the wait ended at no refusal, want %s", tc.wantReason)
			case r != nil && (r.Reason != tc.wantReason || r.Client != tc.wantClient || r.Key != "lock:{job-1}"):
				t.Errorf("refusal %+v, want client %d refused for %s", *r, tc.wantClient, tc.wantReason)
			}
		})
	}
}

// TestAwaitGrantWakesAtARefusal: a fault already waiting is woken by a
// refusal that arrives while it waits, not only by a grant.
func TestAwaitGrantWakesAtARefusal(t *testing.T) {
	tr := newTracker(6 * time.Second)
	done := make(chan *nemesis.Refusal, 1)
	go func() {
		_, r := tr.awaitGrant(context.Background(), 1000, []string{nemesis.GuardNoReplicas})
		done <- r
	}()
	time.Sleep(5 * time.Millisecond)
	tr.observe(history.Event{Time: 1100, Process: 1, Client: 1, Type: history.Invoke, F: history.FAcquire, Key: "lock:{job-1}", Token: "t"})
	tr.observe(history.Event{Time: 1101, Process: 1, Client: 1, Type: history.Fail, F: history.FAcquire, Key: "lock:{job-1}", Token: "t", Error: "NOREPLICAS Not enough good replicas to write."})
	select {
	case r := <-done:
		if r == nil || r.Reason != nemesis.GuardNoReplicas {
			t.Errorf("woken with %+v, want the NOREPLICAS refusal", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wait was not woken by the refusal")
	}
}
