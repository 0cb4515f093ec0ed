package checker

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// A grant inside an older lease is a double grant even when the direct check
// reported it against another, wider lease (it reports each grant once):
// the double holder must not say the older lease "expired honestly". Before,
// an eviction run's three such pairs read "client 7's lease expired while it
// still acted as holder; client 1 was then granted the lock, legitimately"
// 0.1 s into a 6 s lease.
func TestDoubleHoldersInsideAnyOlderLeaseAreDoubleGrants(t *testing.T) {
	h := newHB().
		acq(0, "A", 1000, 1, 2, ok, 1).read(0, "A", 1, 0, 300, 301, ok).
		acq(1, "B", 2000, 10, 11, ok, 2).read(1, "B", 2, 0, 302, 303, ok).
		acq(2, "C", 1000, 20, 21, ok, 3).read(2, "C", 3, 0, 304, 305, ok)
	r, err := Check(h.build(), nil, Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.DoubleHolderList) != 3 {
		t.Fatalf("%d double holders, want 3 (A&B, A&C, B&C)", len(r.DoubleHolderList))
	}
	for _, d := range r.DoubleHolderList {
		if !d.DoubleGrant {
			t.Errorf("clients %d & %d: granted inside a live lease, yet not called a double grant: %s", d.StaleClient, d.NewClient, d.Explanation)
		}
	}
}

// A fault's wait that the replication guard ended (closed-by-setting) is
// counted beside the failovers (the summary says it on the run line); it is an
// observation, not a fault, so it raises no warning about unregistered marks.
func TestClosedBySettingCounted(t *testing.T) {
	for _, tt := range []struct {
		name   string
		closed int
	}{
		{"none closed", 0},
		{"two closed", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHB().acq(0, "A", 1000, 0, 1, ok, 1).rel(0, "A", 2, 3, ok).nem(history.NFailover, "valkey-1", 6)
			for i := range tt.closed {
				h.nem(history.NClosedBySetting, "valkey-0", 4+float64(i)/10)
			}
			r, err := Check(h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			if r.ClosedBySetting != tt.closed || r.Failovers != 1 {
				t.Errorf("closed_by_setting %d, failovers %d; want %d, 1", r.ClosedBySetting, r.Failovers, tt.closed)
			}
			if len(r.Warnings) > 0 {
				t.Errorf("warnings %q, want none", r.Warnings)
			}
		})
	}
}
