package report

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
)

// The "who held" sentence must agree with the violations: a double grant
// whose holders never acted at the same moment is still a grant to two
// clients (lab 3's fast restart: the first holder's next write was turned
// away 24 ms after the second grant).
func TestWhoHeldAgreesWithDoubleGrants(t *testing.T) {
	tests := []struct {
		name    string
		r       checker.Result
		want    string
		notWant string
	}{
		{"no violation", checker.Result{Ops: map[string]*checker.OpCounts{"acquire": {OK: 3}}},
			"granted the lock 3 times, never to two clients at once", ""},
		{"double grant, no double holder", checker.Result{Ops: map[string]*checker.OpCounts{"acquire": {OK: 3}},
			Violations: []checker.Violation{{Kind: "double-grant"}, {Kind: "newer-holder-turned-away"}}},
			"1 time it granted the lock while another client's lease was still alive", "never to two clients"},
		{"lease lost only", checker.Result{Ops: map[string]*checker.OpCounts{"acquire": {OK: 3}},
			Violations: []checker.Violation{{Kind: "lease-lost", Affects: "lock"}}},
			"no two clients acted as holder at the same moment", "never to two clients"},
		{"more double grants than double holders", checker.Result{Ops: map[string]*checker.OpCounts{"acquire": {OK: 9}}, DoubleHolders: 1,
			DoubleHolderList: []checker.DoubleHolder{{DoubleGrant: true}},
			Violations:       []checker.Violation{{Kind: "double-grant"}, {Kind: "double-grant"}, {Kind: "double-grant"}}},
			"alive 3 times, the other 2 with the older holder already stopped", ""},
		{"as many double grants as double holders", checker.Result{Ops: map[string]*checker.OpCounts{"acquire": {OK: 9}}, DoubleHolders: 1,
			DoubleHolderList: []checker.DoubleHolder{{DoubleGrant: true}},
			Violations:       []checker.Violation{{Kind: "double-grant"}}},
			"each time granted twice by the lock service", "the other"},
		{"a finding that does not count against the lock", checker.Result{Ops: map[string]*checker.OpCounts{"acquire": {OK: 3}},
			Violations: []checker.Violation{{Kind: "stale-write-accepted", Affects: "resource"}}},
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
		r := &checker.Result{
			Failovers:        tt.failovers,
			Ops:              map[string]*checker.OpCounts{"write": {OK: 10}},
			StaleWrites:      checker.StaleWrites{Attempted: 1, Accepted: 1},
			DoubleHolderList: []checker.DoubleHolder{{StaleWrite: "accepted", StaleClient: 1, NewTurnedAway: "write", FenceSource: "sequence"}},
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

// Each of the summary's conditional lines shows when the result holds what it
// speaks of, and only then (the checker's tests check the data itself).
func TestSummaryLines(t *testing.T) {
	slowest, never := 2500.0, -1.0
	acquires := map[string]*checker.OpCounts{"acquire": {OK: 3}}
	tests := []struct {
		name      string
		r         checker.Result
		want, not string
	}{
		{"exercised", checker.Result{Valid: checker.Valid, Ops: acquires}, "VALID: no violation found.\n", "not exercised"},
		{"not exercised", checker.Result{Valid: checker.Valid, Ops: acquires, NotExercised: "kill (0 of 2 windows had a lease alive when it began)"},
			"VALID: no violation found, but not exercised: kill (0 of 2 windows", ""},
		{"regrant, the slowest", checker.Result{Ops: acquires, Coverage: []checker.FaultCoverage{{Fault: "kill", Windows: 1, Reached: 1}},
			FaultWindows: []checker.FaultWindow{{Fault: "kill", StartS: 1.5, RegrantMs: &slowest}}},
			"regranted after each fault (every key asked for granted again): 1 window(s), the slowest 2.5 s after the kill at 1.5s", "never granted again"},
		{"regrant, never", checker.Result{Ops: acquires, Coverage: []checker.FaultCoverage{{Fault: "kill", Windows: 1, Reached: 1}},
			FaultWindows: []checker.FaultWindow{{Fault: "kill", StartS: 1.5, RegrantMs: &never}}},
			"1 window(s) after which a key was never granted again", "the slowest"},
		{"no fault", checker.Result{Ops: acquires}, "coverage: no fault was injected", "regranted"},
		{"orphaned", checker.Result{Ops: acquires, Ownership: checker.OwnershipResult{Orphaned: []checker.OrphanedSpan{{Key: "lock:{job}", StartS: 1, Ms: 3000, Refused: 40,
			LeftBy: []checker.LeftBy{{F: "acquire", Client: 7, Outcome: "info", TimeS: 0.9}}}}}},
			"orphaned: 40 acquires turned away while no client believed it held the key, in 1 span on 1 key", ""},
		{"none orphaned", checker.Result{Ops: acquires}, "", "orphaned"},
		{"cut off", checker.Result{Ops: acquires, Liveness: checker.LivenessResult{CutOff: []checker.CutOffClient{{Client: 1, Acquires: 12, Error: "The client is closed"}}}},
			`cut off: client 1 never reached the lock service: 12 acquires failed or went unanswered, none granted, none refused for another holder (the first said "The client is closed")`, ""},
		{"none cut off", checker.Result{Ops: acquires}, "", "cut off"},
		{"revoked", checker.Result{Ops: acquires, DoubleHolders: 1, DoubleHolderList: []checker.DoubleHolder{{Revoked: true}}},
			"ended the older holder's session", "granted twice"},
		{"closed by the setting", checker.Result{Ops: acquires, Failovers: 1, ClosedBySetting: 2},
			"1 failover; the replication setting refused the grant a fault waited for 2 times (closed by the setting)", ""},
		{"none closed", checker.Result{Ops: acquires, Failovers: 1}, ", 1 failover\n", "closed by the setting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summary(&tt.r)
			if !strings.Contains(s, tt.want) {
				t.Errorf("summary lacks %q:\n%s", tt.want, s)
			}
			if tt.not != "" && strings.Contains(s, tt.not) {
				t.Errorf("summary says %q:\n%s", tt.not, s)
			}
		})
	}
}
