package scenario

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// Coordinated failovers, the way to move a primary for maintenance (Valkey's
// FAILOVER; SENTINEL FAILOVER ... COORDINATED): the same cut and fresh grant
// as the failover race, then a switch that waits for the replica to catch
// up, and its forced form that does not. They join the table in
// scenario.go.
var coordinatedScenarios = map[string]Scenario{
	"coordinated-failover": {
		Teaches: "a maintenance switch loses nothing: the replicas' links cut and a grant on the primary alone, the links " +
			"back, then SENTINEL FAILOVER ... COORDINATED pauses writes until the replica has the grant, and hands over",
		Faults: []string{"failover-coordinated"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: longJob,
		Expect: "lock valid (no double grant)",
		expect: always(LockIs(checker.Valid), NoDoubleGrant(), ResourceIs(checker.Valid)),
	},
	"standalone-coordinated": {
		Teaches: "the same switch on a standalone primary: FAILOVER TO the replica, then the service address moved; " +
			"no grant is lost",
		Topology: "standalone",
		Faults:   []string{"failover-coordinated"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: longJob,
		Expect: "lock valid (no double grant)",
		expect: always(LockIs(checker.Valid), NoDoubleGrant(), ResourceIs(checker.Valid)),
	},
	"standalone-coordinated-force": {
		Teaches: "FAILOVER TO ... TIMEOUT 300 FORCE with the replica paused behind a fresh grant: the switch happens " +
			"when the timeout expires, yet SIGSTOP loses nothing already sent, so the target reads the grant first (10 of 10 valid)",
		Topology: "standalone",
		Faults:   []string{"failover-coordinated-force"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: longJob,
		Expect: "lock valid or blamed on the failover (measured: valid on 10 of 10 seeds)",
		expect: always(LockValidOrBlamedOn("failover")),
	},
}

func init() {
	for k, v := range coordinatedScenarios {
		all[k] = v
	}
}
