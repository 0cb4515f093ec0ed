package redlock

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// The Redlock debate on N independent primaries, each lesson with its
// expectation: no faults, Kleppmann's clock jump, antirez's restart remedy, a
// minority cut off, a holder paused past its validity.
var scenarios = map[string]scenario.Scenario{
	"redlock-baseline": {
		Teaches: "Redlock on five independent primaries with no faults: the lock, the resource and the checker agree " +
			"that all is well (the client's lease is the validity, TTL − elapsed − drift; a false alarm here is a bug)",
		Topology: Topology, Recipe: "redlock", Fence: "none",
		Clients: 8, Keys: 2, TTL: 2 * time.Second, TimeLimit: 20 * time.Second, Job: scenario.ShortJob,
		Expect: "valid",
	},
	"redlock-clock-jump": {
		Teaches: "Kleppmann's scenario: client 1 locks A,B,C (D,E unreachable to it); C's clock jumps forward and its " +
			"copy expires; client 2 locks C,D,E (A,B unreachable to it) while client 1 still holds a valid-looking lock",
		Topology: Topology, Recipe: "redlock", Fence: "none",
		Faults: []string{"redlock-clock-jump"}, Clients: 8, Keys: 1, TTL: 3 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 4 * time.Second, Job: scenario.LongJob, FakeTime: true,
		// A double grant, or lock-not-linearizable when the first holder's
		// extend failed on the jumped node and its release (2 of 5) failed too:
		// the lock was still its own when the other side was granted it.
		Expect: "lock invalid (double grant, server-clock)",
	},
	"redlock-restart": {
		Teaches: "a node restarted without persistence forgets a lock it granted, and a second client gets a majority; " +
			"with antirez's remedy (--appendfsync always, or --delayed-restart longer than the TTL) it does not",
		Topology: Topology, Recipe: "redlock", Fence: "none",
		Faults: []string{"redlock-restart"}, Clients: 8, Keys: 1, TTL: 3 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 4 * time.Second, Job: scenario.LongJob,
		Expect: "lock invalid (double grant, node-restart); lock valid with AOF always or --delayed-restart > TTL",
	},
	"redlock-partition-minority": {
		Teaches: "a network partition that cuts a minority of the Redlock nodes (2 of 5) off from every client takes " +
			"nothing away from safety or progress: the three left reachable are a majority, so grants, extends and " +
			"releases go on there, and the cut-off nodes only cost a per-node timeout (docker runtime only)",
		Topology: Topology, Recipe: "redlock", Fence: "none", Runtime: "docker",
		Faults: []string{"partition-minority"}, Clients: 8, Keys: 2, TTL: 2 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 5 * time.Second,
		Job:    scenario.Job{Steps: 10, Think: 100 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "valid; acquires keep succeeding on the majority",
	},
	"redlock-paused-client": {
		Teaches: "a Redlock holder paused past its validity (a GC pause) wakes and writes: the lock check is valid, the " +
			"data is not; Redlock has no counter to fence with, so only a number issued by the resource could stop it",
		Topology: Topology, Recipe: "redlock", Fence: "none",
		Faults: []string{"pause-client"}, Clients: 4, Keys: 1, TTL: 2 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 3 * time.Second,
		Job:    scenario.Job{Steps: 3, Think: 150 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "lock valid; resource invalid without a fence",
	},
}

func init() {
	scenario.Register(scenarios, map[string]scenario.Expectation{
		"redlock-baseline":   scenario.Always(scenario.ValidIs(checker.Valid)),
		"redlock-clock-jump": scenario.Always(scenario.LockIs(checker.Invalid), scenario.LockViolationBy("server-clock")),
		"redlock-restart": func(k scenario.Knobs) []scenario.Predicate {
			if k.Persistent {
				// The remedy's promise is the lock's: no second grant. A
				// holder whose renewals the kill cut short still runs its
				// step under way to its write after its lease, and with no
				// fence to stop it (redlock-paused-client's lesson) the
				// resource may see it: in CI under a load of other tests
				// (acquire p99 151 ms), the AOF-always run's client 6 wrote
				// 2 ms after its lease ended, lock valid, resource invalid.
				return []scenario.Predicate{scenario.LockIs(checker.Valid), scenario.NoDoubleGrant()}
			}
			return []scenario.Predicate{scenario.LockIs(checker.Invalid), scenario.LockViolationBy("node-restart")}
		},
		"redlock-partition-minority": scenario.Always(scenario.ValidIs(checker.Valid), scenario.GrantsDuring("isolate-node")),
		"redlock-paused-client":      scenario.ClientSide,
	})
}
