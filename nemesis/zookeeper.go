package nemesis

import (
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// TopologyZooKeeper is the Needs.Topology of the ZooKeeper faults: they act
// on the Zab leader of a ZooKeeper ensemble (cluster/zookeeper.go). Their
// inject code is etcd's (etcd.go): a leader asked of the members, killed or
// paused, a new one elected by the others.
const TopologyZooKeeper = cluster.TopologyZooKeeper

var (
	runZKKillLeader  = killLeader("ZooKeeper")
	runZKPauseLeader = pauseLeader("ZooKeeper", cluster.ZKElectionTimeout)
)

// zkKillSpan covers the followers giving the leader up (syncLimit ticks,
// 1 s), the election, and the old leader's JVM restarting, reloading its
// snapshot and log and syncing as a follower (2-4 s on the 2-core machine).
func zkKillSpan(Step, PlanParams) time.Duration { return 8 * time.Second }

// planZKPause pauses the leader for two to three election timeouts.
func planZKPause(rng *rand.Rand, _ PlanParams) Step {
	return Step{Duration: 2*cluster.ZKElectionTimeout + time.Duration(rng.Int64N(int64(cluster.ZKElectionTimeout)))}
}
