package scenario

import (
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// The stuck-lock anti-patterns, each with its lesson and its expectation in
// one place (Redlock's own lessons are declared in deployments/redlock). They
// join the table in scenario.go.
var stuckScenarios = map[string]Scenario{
	"stuck-lock": {
		Teaches: "SETNX then EXPIRE as two commands, or an extend without PX, leave a key with no TTL when the client " +
			"dies at the wrong moment: nobody can ever take the lock again (liveness, not safety); native's SET NX PX cannot",
		Recipe: "setnx-expire", Fence: "none",
		Faults: []string{"crash-client", "kill-holder"}, Clients: 6, Keys: 2, TTL: time.Second,
		TimeLimit: 20 * time.Second, Interval: 3 * time.Second,
		Job:    Job{Steps: 4, Think: 150 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "setnx-expire, extend-no-px: a stuck lock (liveness invalid, PTTL -1); native: valid",
		expect: func(k Knobs) []Predicate {
			if k.LeavesNoTTL {
				return []Predicate{StuckLock(true)}
			}
			return []Predicate{StuckLock(false), ValidIs(checker.Valid)}
		},
	},
}

func init() {
	for k, v := range stuckScenarios {
		all[k] = v
	}
}

// StuckLock: the liveness verdict found a stuck lock confirmed by the PTTL
// audit (want), or found none (!want).
func StuckLock(want bool) Predicate {
	text := "no stuck lock"
	if want {
		text = "a stuck lock with PTTL -1"
	}
	return Predicate{Text: text, Check: func(r *checker.Result) (string, bool) {
		confirmed := 0
		for _, s := range r.Liveness.StuckLocks {
			for _, v := range s.Audit {
				if v == -1 {
					confirmed++
					break
				}
			}
		}
		saw := fmt.Sprintf("liveness.valid = %s, %d stuck lock(s), %d with PTTL -1", r.Liveness.Valid, len(r.Liveness.StuckLocks), confirmed)
		if want {
			return saw, confirmed > 0 && r.Liveness.Valid == checker.Invalid
		}
		return saw, len(r.Liveness.StuckLocks) == 0 && r.Liveness.Valid == checker.Valid
	}}
}
