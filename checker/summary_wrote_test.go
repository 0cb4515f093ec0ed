package checker

import (
	"strings"
	"testing"
)

// TestWhoWroteSaysWhyTheFenceSidedWithTheOlder: the sentence blames a
// failover or restart only when the run had one; behind a pooler that shares
// one session among clients (no fault at all) the numbers came apart from
// the grants, and the summary once blamed a failover that never happened.
func TestWhoWroteSaysWhyTheFenceSidedWithTheOlder(t *testing.T) {
	tests := []struct {
		failovers int
		want      string
		not       string
	}{
		{failovers: 3, want: "because a failover or restart set the newer one's back"},
		{failovers: 0, want: "whose number was higher than the newer one's", not: "failover"},
	}
	for _, tt := range tests {
		r := &Result{
			Failovers:        tt.failovers,
			Ops:              map[string]*OpCounts{"write": {OK: 10}},
			StaleWrites:      StaleWrites{Attempted: 1, Accepted: 1},
			DoubleHolderList: []DoubleHolder{{StaleWrite: "accepted", StaleClient: 1, NewTurnedAway: "write", FenceSource: "sequence"}},
		}
		got := whoWrote(r)
		if !strings.Contains(got, tt.want) {
			t.Errorf("failovers %d: %q does not say %q", tt.failovers, got, tt.want)
		}
		if tt.not != "" && strings.Contains(got, tt.not) {
			t.Errorf("failovers %d: %q speaks of a %s", tt.failovers, got, tt.not)
		}
	}
}
