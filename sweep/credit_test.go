package sweep

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
)

// TestCreditedInjection: with faults back to back a failover's lost lease
// runs past the next cut, and the grants made over it then are still the
// first failover's doing.
func TestCreditedInjection(t *testing.T) {
	injection := latestInjection([]int64{100, 200, 300}) // three injections (cuts, pauses)
	for _, tt := range []struct {
		name    string
		d       checker.DoubleHolder
		byGrant bool
		want    int
	}{
		{"a failover's double grant inside its own window", checker.DoubleHolder{Start: 150, StaleGranted: 110}, true, 0},
		{"a failover's lost lease spilling past the next cut", checker.DoubleHolder{Start: 210, StaleGranted: 110}, true, 0},
		{"a grant lost under the second cut", checker.DoubleHolder{Start: 250, StaleGranted: 205}, true, 1},
		{"no grant time (an older results.json): the second holder's start", checker.DoubleHolder{Start: 210}, true, 1},
		{"a stale grant before any injection", checker.DoubleHolder{Start: 210, StaleGranted: 50}, true, 1},
		{"a held-moment fault (a pause): the injection before the second holder", checker.DoubleHolder{Start: 210, StaleGranted: 110}, false, 1},
		{"before any injection", checker.DoubleHolder{Start: 50, StaleGranted: 40}, true, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := creditedInjection(injection, tt.d, tt.byGrant); got != tt.want {
				t.Errorf("creditedInjection = %d, want %d", got, tt.want)
			}
		})
	}
}
