package scenario

import (
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// The Redlock debate and the stuck-lock anti-patterns, each with its lesson
// and its expectation in one place. They join the table in scenario.go.
var redlockScenarios = map[string]Scenario{
	"redlock-baseline": {
		Teaches: "Redlock on five independent primaries with no faults: the lock, the resource and the checker agree " +
			"that all is well (the client's lease is the validity, TTL − elapsed − drift; a false alarm here is a bug)",
		Topology: "redlock", Recipe: "redlock", Fence: "none",
		Clients: 8, Keys: 2, TTL: 2 * time.Second, TimeLimit: 20 * time.Second, Job: ShortJob,
		Expect: "valid", expect: Always(ValidIs(checker.Valid)),
	},
	"redlock-clock-jump": {
		Teaches: "Kleppmann's scenario: client 1 locks A,B,C (D,E unreachable to it); C's clock jumps forward and its " +
			"copy expires; client 2 locks C,D,E (A,B unreachable to it) while client 1 still holds a valid-looking lock",
		Topology: "redlock", Recipe: "redlock", Fence: "none",
		Faults: []string{"redlock-clock-jump"}, Clients: 8, Keys: 1, TTL: 3 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 4 * time.Second, Job: LongJob, FakeTime: true,
		// A double grant, or lock-not-linearizable when the first holder's
		// extend failed on the jumped node and its release (2 of 5) failed too:
		// the lock was still its own when the other side was granted it.
		Expect: "lock invalid (double grant, server-clock)",
		expect: Always(LockIs(checker.Invalid), LockViolationBy("server-clock")),
	},
	"redlock-restart": {
		Teaches: "a node restarted without persistence forgets a lock it granted, and a second client gets a majority; " +
			"with antirez's remedy (--appendfsync always, or --delayed-restart longer than the TTL) it does not",
		Topology: "redlock", Recipe: "redlock", Fence: "none",
		Faults: []string{"redlock-restart"}, Clients: 8, Keys: 1, TTL: 3 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 4 * time.Second, Job: LongJob,
		Expect: "lock invalid (double grant, node-restart); lock valid with AOF always or --delayed-restart > TTL",
		expect: func(k Knobs) []Predicate {
			if k.Persistent {
				// The remedy's promise is the lock's: no second grant. A
				// holder whose renewals the kill cut short still runs its
				// step under way to its write after its lease, and with no
				// fence to stop it (redlock-paused-client's lesson) the
				// resource may see it: in CI under a load of other tests
				// (acquire p99 151 ms), the AOF-always run's client 6 wrote
				// 2 ms after its lease ended, lock valid, resource invalid.
				return []Predicate{LockIs(checker.Valid), NoDoubleGrant()}
			}
			return []Predicate{LockIs(checker.Invalid), LockViolationBy("node-restart")}
		},
	},
	"redlock-partition-minority": {
		Teaches: "a network partition that cuts a minority of the Redlock nodes (2 of 5) off from every client takes " +
			"nothing away from safety or progress: the three left reachable are a majority, so grants, extends and " +
			"releases go on there, and the cut-off nodes only cost a per-node timeout (docker runtime only)",
		Topology: "redlock", Recipe: "redlock", Fence: "none", Runtime: "docker",
		Faults: []string{"partition-minority"}, Clients: 8, Keys: 2, TTL: 2 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 5 * time.Second,
		Job:    Job{Steps: 10, Think: 100 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "valid; acquires keep succeeding on the majority",
		expect: Always(ValidIs(checker.Valid), GrantsDuring("isolate-node")),
	},
	"redlock-paused-client": {
		Teaches: "a Redlock holder paused past its validity (a GC pause) wakes and writes: the lock check is valid, the " +
			"data is not; Redlock has no counter to fence with, so only a number issued by the resource could stop it",
		Topology: "redlock", Recipe: "redlock", Fence: "none",
		Faults: []string{"pause-client"}, Clients: 4, Keys: 1, TTL: 2 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 3 * time.Second,
		Job:    Job{Steps: 3, Think: 150 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "lock valid; resource invalid without a fence",
		expect: clientSide,
	},
	"stuck-lock": {
		Teaches: "SETNX then EXPIRE as two commands, or an extend without PX, leave a key with no TTL when the client " +
			"dies at the wrong moment: nobody can ever take the lock again (liveness, not safety); native's SET NX PX cannot",
		Recipe: "setnx-expire", Fence: "none",
		Faults: []string{"crash-client", "kill-holder"}, Clients: 6, Keys: 2, TTL: time.Second,
		TimeLimit: 20 * time.Second, Interval: 3 * time.Second,
		Job:    Job{Steps: 4, Think: 150 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "setnx-expire, extend-no-px: a stuck lock (liveness invalid, PTTL -1); native: valid",
		expect: func(k Knobs) []Predicate {
			if k.Recipe == "setnx-expire" || k.Recipe == "extend-no-px" {
				return []Predicate{StuckLock(true)}
			}
			return []Predicate{StuckLock(false), ValidIs(checker.Valid)}
		},
	},
}

func init() {
	for k, v := range redlockScenarios {
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
