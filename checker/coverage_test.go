package checker

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// A valid run says which faults had their chance: a cut with a grant inside,
// a kill or a pause while a lease was alive (the paused client's own); a run
// whose faults never got there says so on its first line.
func TestCoverage(t *testing.T) {
	tests := []struct {
		name     string
		h        *hb
		want     map[string][2]int // fault → reached, windows
		exercise bool              // every fault reached its moment
	}{
		{"a cut with a grant inside, a kill while it was held",
			newHB().
				nem("cut-replication", "valkey-0", 1000).
				acq(0, "A", 6000, 1100, 1101, ok, 1).
				nem("kill", "valkey-0", 3000).
				nem("heal-replication", "valkey-0", 3050).
				rel(0, "A", 4000, 4001, ok),
			map[string][2]int{"cut-replication": {1, 1}, "kill": {1, 1}}, true},
		{"a cut whose grant came before it, a kill after the release",
			newHB().
				acq(0, "A", 6000, 100, 101, ok, 1).
				nem("cut-replication", "valkey-0", 1000).
				rel(0, "A", 2000, 2001, ok).
				nem("kill", "valkey-0", 3000).
				nem("heal-replication", "valkey-0", 3050),
			map[string][2]int{"cut-replication": {0, 1}, "kill": {0, 1}}, false},
		{"a pause of the client that held the lock",
			newHB().
				acq(0, "A", 2000, 100, 101, ok, 1).
				nem("pause-client", "client-0", 500).
				nem("resume-client", "client-0", 3500),
			map[string][2]int{"pause-client": {1, 1}}, true},
		{"a pause of another client while client 0 held it",
			newHB().
				acq(0, "A", 2000, 100, 101, ok, 1).
				nem("pause-client", "client-1", 500).
				nem("resume-client", "client-1", 3500),
			map[string][2]int{"pause-client": {0, 1}}, false},
		{"a cancel that reached its client's acquire in flight",
			newHB().
				nem("cancel-acquire", "client-0", 500).
				op(0, history.Event{F: history.FAcquire, Token: "A", TTLMs: 2000}, 490, 700, history.Info, history.Event{Reply: history.ReplyCancel}).
				nem("cancel-acquire-done", "client-0", 2500),
			map[string][2]int{"cancel-acquire": {1, 1}}, true},
		{"a cancel whose call was answered before it went out",
			newHB().
				nem("cancel-acquire", "client-0", 500).
				acq(0, "A", 2000, 600, 601, ok, 1).
				rel(0, "A", 700, 701, ok).
				nem("cancel-acquire-done", "client-0", 2500),
			map[string][2]int{"cancel-acquire": {0, 1}}, false},
		{"a dropped reply of another client's release",
			newHB().
				acq(1, "B", 3000, 100, 101, ok, 1).
				nem("drop-release-reply", "client-0", 500).
				op(1, history.Event{F: history.FRelease, Token: "B"}, 600, 700, history.Info, history.Event{Reply: history.ReplyDrop}).
				nem("drop-release-reply-done", "client-0", 2500),
			map[string][2]int{"drop-release-reply": {0, 1}}, false},
		{"no fault: nothing to cover",
			newHB().acq(0, "A", 2000, 100, 101, ok, 1).rel(0, "A", 200, 201, ok),
			map[string][2]int{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Check(tt.h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			if r.Valid != Valid {
				t.Fatalf("verdict %v: %+v", r.Valid, r.Violations)
			}
			got := map[string][2]int{}
			for _, c := range r.Coverage {
				got[c.Fault] = [2]int{c.Reached, c.Windows}
			}
			if len(got) != len(tt.want) {
				t.Errorf("coverage %v, want %v", got, tt.want)
			}
			for f, w := range tt.want {
				if got[f] != w {
					t.Errorf("%s: reached %d of %d, want %d of %d", f, got[f][0], got[f][1], w[0], w[1])
				}
			}
			// The summary's first line follows NotExercised (report.Summary).
			if tt.exercise && r.NotExercised != "" {
				t.Errorf("every fault reached its moment, yet not exercised: %q", r.NotExercised)
			} else if !tt.exercise && r.NotExercised == "" {
				t.Errorf("a fault never reached its moment, and NotExercised is empty")
			}
		})
	}
}
