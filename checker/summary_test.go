package checker

import (
	"strings"
	"testing"
)

// The "who held" sentence must agree with the violations: a double grant
// whose holders never acted at the same moment is still a grant to two
// clients (lab 3's fast restart: the first holder's next write was turned
// away 24 ms after the second grant).
func TestWhoHeldAgreesWithDoubleGrants(t *testing.T) {
	tests := []struct {
		name    string
		r       Result
		want    string
		notWant string
	}{
		{"no violation", Result{Ops: map[string]*OpCounts{"acquire": {OK: 3}}},
			"granted the lock 3 times, never to two clients at once", ""},
		{"double grant, no double holder", Result{Ops: map[string]*OpCounts{"acquire": {OK: 3}},
			Violations: []Violation{{Kind: "double-grant"}, {Kind: "newer-holder-turned-away"}}},
			"1 time it granted the lock while another client's lease was still alive", "never to two clients"},
		{"lease lost only", Result{Ops: map[string]*OpCounts{"acquire": {OK: 3}},
			Violations: []Violation{{Kind: "lease-lost", Affects: "lock"}}},
			"no two clients acted as holder at the same moment", "never to two clients"},
		{"a finding that does not count against the lock", Result{Ops: map[string]*OpCounts{"acquire": {OK: 3}},
			Violations: []Violation{{Kind: "stale-write-accepted", Affects: "resource"}}},
			"never to two clients at once", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := whoHeld(&tt.r)
			if !strings.Contains(got, tt.want) {
				t.Errorf("whoHeld = %q, want it to say %q", got, tt.want)
			}
			if tt.notWant != "" && strings.Contains(got, tt.notWant) {
				t.Errorf("whoHeld = %q, must not say %q", got, tt.notWant)
			}
		})
	}
}
