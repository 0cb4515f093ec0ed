package scenario

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// The standalone primary's lessons (--topology standalone: one primary and
// its replicas, no Sentinel, clients at one service address): the lock both
// seed documents start from, "SET key token NX EX ttl is an atomic
// best-effort lock on a single Redis". They join the table in scenario.go.
var standaloneScenarios = map[string]Scenario{
	"standalone-baseline": {
		Teaches:  "no faults on a single primary: the lock, the resource and the checker agree that all is well (a false alarm here is a bug)",
		Topology: "standalone",
		Clients:  16, Keys: 4, TTL: 2 * time.Second, TimeLimit: 30 * time.Second, Job: shortJob,
		Expect: "valid", expect: always(ValidIs(checker.Valid)),
	},
	"standalone-restart": {
		Teaches: "best effort means this: the primary SIGKILLed and restarted without persistence comes back empty, " +
			"its replicas resync from it, and every lock is granted again; with --appendonly --appendfsync always it reloads them",
		Topology: "standalone",
		// As fast-restart: a lease just renewed, then the kill; the jobs
		// outlast the regrant.
		Faults: []string{"fast-restart"}, Clients: 8, Keys: 1, TTL: 3 * time.Second,
		TimeLimit: 20 * time.Second, Interval: 5 * time.Second, Job: longJob,
		Expect: "lock invalid (double grant, fast-restart); valid with --appendonly --appendfsync always",
		expect: func(k Knobs) []Predicate {
			if k.Persistent {
				return []Predicate{LockIs(checker.Valid), NoDoubleGrant()}
			}
			return []Predicate{LockIs(checker.Invalid), DoubleGrantBy("fast-restart")}
		},
	},
	"standalone-promote": {
		Teaches: "the Sentinel race done by hand: an operator promotes a replica whose link was cut; it never saw the " +
			"grant the primary made alone, and grants the lock again to the clients the service address now sends it",
		Topology: "standalone",
		// As failover-race: long jobs, so the holder of the lost grant is
		// still at work when the promoted replica grants again.
		Faults: []string{"promote-replica"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: longJob,
		Expect: "lock invalid (double grant, failover)",
		expect: grantLostInFailover,
	},
}

func init() {
	for k, v := range standaloneScenarios {
		all[k] = v
	}
}
