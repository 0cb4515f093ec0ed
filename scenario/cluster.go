package scenario

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// Valkey Cluster's lessons (--topology cluster: 3 shards of a primary and a
// replica, failover by the cluster bus, no Sentinel). Every fault targets
// the shard that owns lock:{job-1}'s slot. They join the table in
// scenario.go.
var clusterScenarios = map[string]Scenario{
	"cluster-failover-race": {
		Teaches: "Valkey Cluster keeps Sentinel's failover race: a grant the lock key's shard primary acknowledged " +
			"before its replica copied it is lost when the cluster bus promotes that replica, which grants the lock again",
		Topology: "cluster",
		// As failover-race: the TTL outlasts the failover (cluster-node-timeout
		// 1 s, then the election) and the jobs outlast the TTL.
		Faults: []string{"cluster-cut-replication"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: LongJob,
		Expect: "lock invalid (double grant, failover)",
		expect: GrantLostInFailover,
	},
	"cluster-graceful-failover": {
		Teaches: "the same cut and fresh grant, then a graceful CLUSTER FAILOVER: the replica catches up with the " +
			"primary before it takes over, so no grant is lost (FORCE and TAKEOVER do not wait: --faults cluster-takeover)",
		Topology: "cluster",
		Faults:   []string{"cluster-failover"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: LongJob,
		Expect: "lock valid (no double grant)",
		expect: Always(LockIs(checker.Valid), NoDoubleGrant(), ResourceIs(checker.Valid)),
	},
}

func init() {
	for k, v := range clusterScenarios {
		all[k] = v
	}
}
