package standalone

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// The standalone primary's lessons (--topology standalone: one primary and
// its replicas, no Sentinel, clients at one service address): the lock both
// seed documents start from, "SET key token NX EX ttl is an atomic
// best-effort lock on a single Redis", and the two ways an operator moves
// its primary (a promotion by hand, a coordinated switch).
var scenarios = map[string]scenario.Scenario{
	"standalone-baseline": {
		Teaches:  "no faults on a single primary: the lock, the resource and the checker agree that all is well (a false alarm here is a bug)",
		Topology: Topology,
		Clients:  16, Keys: 4, TTL: 2 * time.Second, TimeLimit: 30 * time.Second, Job: scenario.ShortJob,
		Expect: "valid",
	},
	"standalone-restart": {
		Teaches: "best effort means this: the primary SIGKILLed and restarted without persistence comes back empty, " +
			"its replicas resync from it, and every lock is granted again; with --appendonly --appendfsync always it reloads them",
		Topology: Topology,
		// As fast-restart: a lease just renewed, then the kill; the jobs
		// outlast the regrant.
		Faults: []string{"fast-restart"}, Clients: 8, Keys: 1, TTL: 3 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 5 * time.Second, Job: scenario.LongJob,
		Expect: "lock invalid (double grant, fast-restart); valid with --appendonly --appendfsync always",
	},
	"standalone-promote": {
		Teaches: "the Sentinel race done by hand: an operator promotes a replica whose link was cut; it never saw the " +
			"grant the primary made alone, and grants the lock again to the clients the service address now sends it",
		Topology: Topology,
		// As failover-race: long jobs, so the holder of the lost grant is
		// still at work when the promoted replica grants again.
		Faults: []string{"promote-replica"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: scenario.LongJob,
		Expect: "lock invalid (double grant, failover)",
	},
	"standalone-coordinated": {
		Teaches: "the same switch on a standalone primary: FAILOVER TO the replica, then the service address moved; " +
			"no grant is lost",
		Topology: Topology,
		Faults:   []string{"failover-coordinated"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: scenario.LongJob,
		Expect: "lock valid (no double grant)",
	},
	"standalone-coordinated-force": {
		Teaches: "FAILOVER TO ... TIMEOUT 300 FORCE with the replica paused behind a fresh grant: the switch happens " +
			"when the timeout expires, yet SIGSTOP loses nothing already sent, so the target reads the grant first (10 of 10 valid)",
		Topology: Topology,
		Faults:   []string{"failover-coordinated-force"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: scenario.LongJob,
		Expect: "lock valid or blamed on the failover (measured: valid on 10 of 10 seeds)",
	},
	"standalone-coordinated-force-slow-link": {
		Teaches: "the same forced switch with the replica behind on a slow replication link (1 s each way) instead of " +
			"paused: the grant's bytes are in the network when the timeout expires, PSYNC FAILOVER reaches the target by " +
			"another path, the target promotes itself without the grant, and the old primary's data is replaced by its " +
			"full resynchronization: the grant is lost, and the lock granted again",
		// 1 s ± 100 ms: at the network's default 300 ms ± 100 ms, about the
		// switch's own timeout, the grant got there first (10 of 10 valid).
		Topology: Topology, NetProxy: true, NetLatency: time.Second, NetJitter: 100 * time.Millisecond,
		Faults: []string{"failover-coordinated-force-slow-link"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: scenario.LongJob,
		Expect: "lock invalid, blamed on the failover (a double grant, or a lease ended early: the holder's next extend finds the key gone); resource valid",
	},
}

func init() {
	scenario.Register(scenarios, map[string]scenario.Expectation{
		"standalone-baseline": scenario.Always(scenario.ValidIs(checker.Valid)),
		"standalone-restart": func(k scenario.Knobs) []scenario.Predicate {
			if k.Persistent {
				return []scenario.Predicate{scenario.LockIs(checker.Valid), scenario.NoDoubleGrant()}
			}
			return []scenario.Predicate{scenario.LockIs(checker.Invalid), scenario.DoubleGrantBy("fast-restart")}
		},
		"standalone-promote":           scenario.GrantLostInFailover,
		"standalone-coordinated":       scenario.Always(scenario.LockIs(checker.Valid), scenario.NoDoubleGrant(), scenario.ResourceIs(checker.Valid)),
		"standalone-coordinated-force": scenario.Always(scenario.LockValidOrBlamedOn("failover")),
		// The holder learns at its next extend, on the new primary, before
		// the lock is granted again: nobody writes stale (10 seeds: 7 double
		// grants of a lease still certainly alive, 3 leases ended early).
		"standalone-coordinated-force-slow-link": scenario.Always(scenario.LockIs(checker.Invalid), scenario.LockViolationBy("failover"),
			scenario.ResourceIs(checker.Valid)),
	})
}
