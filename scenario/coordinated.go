package scenario

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// Coordinated failovers, the way to move a primary for maintenance (Valkey's
// FAILOVER; SENTINEL FAILOVER ... COORDINATED): the same cut and fresh grant
// as the failover race, then a switch that waits for the replica to catch
// up (standalone's own, with its forced form, are declared in
// deployments/standalone). They join the table in scenario.go.
var coordinatedScenarios = map[string]Scenario{
	"coordinated-failover": {
		Teaches: "a maintenance switch loses nothing: the replicas' links cut and a grant on the primary alone, the links " +
			"back, then SENTINEL FAILOVER ... COORDINATED pauses writes until the replica has the grant, and hands over",
		Faults: []string{"failover-coordinated"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: LongJob,
		Expect: "lock valid (no double grant)",
		expect: Always(LockIs(checker.Valid), NoDoubleGrant(), ResourceIs(checker.Valid)),
	},
}

func init() {
	for k, v := range coordinatedScenarios {
		all[k] = v
	}
}
