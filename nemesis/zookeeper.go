package nemesis

import (
	"context"
	"errors"
	"fmt"
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

// planZKIsolate keeps the leader out for longer than a session: the TTL
// (the session timeout zk-lock asks for) and one to two election timeouts
// more, so that a client that stayed with the old leader would lose its
// session; it keeps it only by moving to a member of the majority.
func planZKIsolate(rng *rand.Rand, p PlanParams) Step {
	return Step{Duration: p.TTL + cluster.ZKElectionTimeout + time.Duration(rng.Int64N(int64(cluster.ZKElectionTimeout)))}
}

var faultZKPartitionLeader = &Fault{
	Name:     "zk-partition-leader",
	Failover: true, Needs: Needs{Topology: TopologyZooKeeper, Runtime: "docker"},
	Marks: []Mark{{Event: "isolate-leader", Heal: "heal-isolate-leader", Cause: CauseSplitBrain}},
	Doc: "(zookeeper, docker runtime) cut the Zab leader off from the other members and from the clients for longer " +
		"than a session: the followers elect a new leader, the old one's clients move their sessions to it or lose them; heal and it follows",
	PlanStep: planZKIsolate,
	Span:     func(s Step, _ PlanParams) time.Duration { return s.Duration + 4*time.Second },
	Inject:   runZKPartitionLeader,
}

// runZKPartitionLeader cuts the Zab leader off from everything
// (cluster.Isolator: the docker runtime disconnects it from every network,
// its own home network, where the clients reach it, included): the
// followers give it up after syncLimit ticks and elect another (logged as
// a failover); the old leader, without a quorum, stops serving; its
// clients' connections go silent, and each moves its session to a member
// of the majority within the session timeout, or loses it (the new leader
// expires it and deletes its znodes). The heal runs even when the run is
// interrupted.
func runZKPartitionLeader(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	iso, ok := c.(cluster.Isolator)
	if !ok {
		return fmt.Errorf("this runtime cannot cut a ZooKeeper member off: run with --runtime docker")
	}
	l, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	logf(env, "isolate-leader", l.Name, "leader", "cut ZooKeeper leader %s off from the other members and from the clients for %v (a silent leader is given up after %v)",
		l.Name, s.Duration.Round(time.Millisecond), cluster.ZKElectionTimeout)
	if err := iso.Isolate(l.Name); err != nil {
		return errors.Join(err, iso.Heal(l.Name))
	}
	return leaderOut(ctx, env, s, "ZooKeeper", l.Name, func() error { return iso.Heal(l.Name) }, "heal-isolate-leader",
		l.Name+" reconnected to the other members and the clients", "cut off")
}

var faultZKKillLeader = &Fault{
	Name:     "zk-kill-leader",
	Kind:     "failover",
	Failover: true, Needs: Needs{Topology: TopologyZooKeeper},
	Marks: []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "(zookeeper) SIGKILL the Zab leader; the followers give it up after syncLimit ticks and elect another; " +
		"the old leader restarts from its data dir and rejoins as a follower",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	Span:     zkKillSpan,
	Inject:   runZKKillLeader,
}

var faultZKPauseLeader = &Fault{
	Name:     "zk-pause-leader",
	Failover: true, Needs: Needs{Topology: TopologyZooKeeper},
	Marks: []Mark{{Event: "pause-node", Heal: "resume-node", Cause: CauseSplitBrain}},
	Doc: "(zookeeper) SIGSTOP the Zab leader for 2-3 election timeouts (syncLimit ticks): the followers elect a new " +
		"leader; SIGCONT and the old one, on an older epoch, steps down",
	PlanStep: planZKPause,
	Span:     func(s Step, _ PlanParams) time.Duration { return s.Duration + 4*time.Second },
	Inject:   runZKPauseLeader,
}
