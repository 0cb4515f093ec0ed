package etcd

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// etcd's lessons: consensus instead of asynchronous replication, and a
// fence number the lock service itself issues (the lock key's create
// revision).
var scenarios = map[string]scenario.Scenario{
	"etcd-leader-failover": {
		Teaches: "etcd's lock survives leader failover: a grant is committed by a Raft majority before it is " +
			"acknowledged, so the new leader knows every lock; the revision fence never goes backwards",
		Topology: "etcd", Recipe: "etcd-mutex", Fence: "read-write",
		// Holds of about a second on two keys: many grants on each side of
		// every election, so the fence's order across leaders is tested.
		Faults: []string{"etcd-kill-leader", "etcd-pause-leader"}, Clients: 8, Keys: 2, TTL: 3 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 5 * time.Second,
		Job:    scenario.Job{Steps: 10, Think: 100 * time.Millisecond, Pause: 50 * time.Millisecond},
		Expect: "lock valid (consensus), resource valid, no fence regression",
	},
	"etcd-partition-member": {
		Teaches: "a network partition cuts the Raft leader off from the other members while the clients still reach it: " +
			"the majority elects a new leader, the old one can commit nothing alone, so no grant is lost or given twice " +
			"(docker runtime only)",
		Topology: "etcd", Recipe: "etcd-mutex", Fence: "read-write", Runtime: "docker",
		Faults: []string{"etcd-partition-member"}, Clients: 8, Keys: 2, TTL: 3 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 5 * time.Second,
		Job:    scenario.Job{Steps: 10, Think: 100 * time.Millisecond, Pause: 50 * time.Millisecond},
		Expect: "lock valid (consensus), resource valid, no fence regression",
	},
	"etcd-paused-client": {
		Teaches: "a holder paused past its etcd lease loses the lock honestly (lock valid) and wakes up to write: the " +
			"lock key's create revision, presented to the resource, turns the stale write away",
		Topology: "etcd", Recipe: "etcd-mutex", Fence: "read-write",
		Faults: []string{"pause-client"}, Clients: 4, Keys: 1, TTL: 2 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 3 * time.Second,
		Job:    scenario.Job{Steps: 3, Think: 150 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "lock valid; resource valid, stale writes rejected by the revision fence (invalid without a fence)",
	},
	"etcd-clock-bump": {
		Teaches: "etcd's leases run on monotonic time, so a wall-clock jump on a member cannot end one early; " +
			"lockjepsen cannot even make the jump: libfaketime does not reach a Go program's clock (the vDSO), so the " +
			"run is refused before it starts, naming why",
		Topology: "etcd", Recipe: "etcd-mutex", Fence: "read-write",
		Faults: []string{"etcd-clock-bump"}, Clients: 4, Keys: 1, TTL: 2 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 4 * time.Second, Job: scenario.Job{Steps: 1, Think: 10 * time.Millisecond, Pause: 20 * time.Millisecond},
		Expect: "refused before the run: an etcd member's clock cannot be moved (documented); lock valid if it could",
	},
}

func init() {
	valid := func(scenario.Knobs) []scenario.Predicate {
		return []scenario.Predicate{scenario.LockIs(checker.Valid), scenario.ResourceIs(checker.Valid), scenario.NoFenceRegression()}
	}
	scenario.Register(scenarios, map[string]scenario.Expectation{
		"etcd-leader-failover":  valid,
		"etcd-partition-member": valid,
		"etcd-paused-client":    scenario.PausedPastLease,
		"etcd-clock-bump": func(scenario.Knobs) []scenario.Predicate {
			return []scenario.Predicate{scenario.LockIs(checker.Valid)}
		},
	})
}
