package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// TopologyEtcd is the Needs.Topology of the etcd faults: they act on the
// Raft leader of an etcd cluster (cluster/etcd.go).
const TopologyEtcd = cluster.TopologyEtcd

// etcdKillSpan covers the election (about 1-2 s with a 1 s election timeout)
// and the old leader's restart and catch-up.
func etcdKillSpan(Step, PlanParams) time.Duration { return 6 * time.Second }

// planEtcdPause pauses the leader for two to three election timeouts.
func planEtcdPause(rng *rand.Rand, _ PlanParams) Step {
	return Step{Duration: 2*cluster.EtcdElectionTimeout + time.Duration(rng.Int64N(int64(cluster.EtcdElectionTimeout)))}
}

// runEtcdKillLeader and runEtcdPauseLeader are the consensus faults on etcd
// (ZooKeeper's are the same code: zookeeper.go).
var (
	runEtcdKillLeader  = killLeader("etcd")
	runEtcdPauseLeader = pauseLeader("etcd", cluster.EtcdElectionTimeout)
)

// killLeader SIGKILLs the leader of a consensus service (product: etcd,
// ZooKeeper), waits for the remaining members to elect another (logged as a
// failover), and restarts the old leader from its data dir: it rejoins as
// a follower.
func killLeader(product string) func(context.Context, Env, Step) error {
	return func(ctx context.Context, env Env, _ Step) error {
		return runKillLeader(ctx, env, product)
	}
}

func runKillLeader(ctx context.Context, env Env, product string) error {
	c := env.Cluster()
	l, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	logf(env, "kill", l.Name, "leader", "SIGKILL %s leader %s (pid %d)", product, l.Name, l.PID)
	if err := c.Kill(l.Name); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nl, err := c.WaitFailover(wctx, l.Name)
	if err != nil {
		return err
	}
	logf(env, history.NFailover, nl.Name, "leader", "%s elected %s; %s was leader", product, nl.Name, l.Name)
	if err := c.Restart(ctx, l.Name, cluster.AsReplica); err != nil {
		return err
	}
	logf(env, "restart", l.Name, "follower", "%s restarted from its data dir, rejoined as a follower", l.Name)
	return nil
}

// pauseLeader SIGSTOPs the leader past the election timeout: the others
// elect a new leader (logged as a failover); SIGCONT and the old leader, on
// an older term (epoch), steps down at the first message it hears.
func pauseLeader(product string, election time.Duration) func(context.Context, Env, Step) error {
	return func(ctx context.Context, env Env, s Step) error {
		c := env.Cluster()
		l, err := c.Primary(ctx)
		if err != nil {
			return err
		}
		logf(env, "pause-node", l.Name, "leader", "SIGSTOP %s leader %s for %v (election timeout %v)", product, l.Name, s.Duration.Round(time.Millisecond), election)
		if err := c.Pause(l.Name); err != nil {
			return err
		}
		return leaderOut(ctx, env, s, product, l.Name, func() error { return c.Resume(l.Name) }, "resume-node", "SIGCONT "+l.Name, "paused")
	}
}

// leaderOut keeps the leader out for the step's duration, then ends
// that with undo (which runs even when the run is interrupted, so the fault
// always heals), logging the heal event and, when the majority elected a new
// leader meanwhile, that failover.
func leaderOut(ctx context.Context, env Env, s Step, product, leader string, undo func() error, healEvent, healText, while string) error {
	sleepErr := Sleep(ctx, s.Duration)
	var elected string
	if sleepErr == nil {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if nl, err := env.Cluster().WaitFailover(wctx, leader); err == nil {
			elected = nl.Name
		}
		cancel()
	}
	if err := undo(); err != nil {
		return err
	}
	logf(env, healEvent, leader, "leader", "%s", healText)
	if elected != "" {
		logf(env, history.NFailover, elected, "leader", "%s elected %s while %s was %s", product, elected, leader, while)
	}
	return sleepErr
}

var faultEtcdPartitionMember = &Fault{
	Name:     "etcd-partition-member",
	Failover: true, Needs: Needs{Topology: TopologyEtcd, Runtime: "docker"},
	Marks: []Mark{{Event: "partition", Heal: "heal-partition", Cause: CauseSplitBrain}},
	Doc: "(etcd, docker runtime) cut the Raft leader off from the other members for 2-3 election timeouts while the " +
		"clients still reach it: the majority elects a new leader, the old one cannot commit; heal and it steps down",
	PlanStep: planEtcdPause,
	Span:     func(s Step, _ PlanParams) time.Duration { return s.Duration + 3*time.Second },
	Inject:   runEtcdPartitionLeader,
}

// runEtcdPartitionLeader cuts the Raft leader off from the other members
// (cluster.Partitioner: the docker runtime disconnects it from their home
// networks and them from its own) while the clients on the host still reach
// it. The majority elects a new leader (logged as a failover); the old one
// cannot commit anything without them, and with etcd's check-quorum steps
// down. The heal runs even when the run is interrupted.
func runEtcdPartitionLeader(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	pc, err := partitioner(c, "member")
	if err != nil {
		return err
	}
	l, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	logf(env, "partition", l.Name, "leader", "cut etcd leader %s off from the other members for %v (election timeout %v); the clients still reach it",
		l.Name, s.Duration.Round(time.Millisecond), cluster.EtcdElectionTimeout)
	if err := partitionNode(pc, l.Name); err != nil {
		return err
	}
	return leaderOut(ctx, env, s, "etcd", l.Name, func() error { return pc.Heal(l.Name) }, "heal-partition",
		l.Name+" reconnected to the other members", "cut off")
}

var faultEtcdClockBump = &Fault{
	Name:  "etcd-clock-bump",
	Needs: Needs{Topology: TopologyEtcd, FakeTime: true},
	Marks: []Mark{{Event: "clock-bump", Heal: "clock-reset", Cause: CauseServerClock}},
	Doc: "(etcd) move a member's wall clock forward: refused, libfaketime cannot move a Go program's clock " +
		"(it reads the vDSO, not libc; verified), and etcd's leases run on monotonic time",
	PlanStep: clockPlan,
	Span:     heldSpan,
	Inject:   runEtcdClockBump,
}

// runEtcdClockBump never gets this far: runner.Config.Validate refuses a
// FakeTime fault on the etcd topology (cluster.ErrEtcdClock), because
// libfaketime cannot move a Go program's clock. It is kept as a fault so
// that the refusal has a name and a doc.
func runEtcdClockBump(_ context.Context, _ Env, s Step) error {
	return fmt.Errorf("bump by %ss: %w", s.Offset, cluster.ErrEtcdClock)
}

var faultEtcdKillLeader = &Fault{
	Name:     "etcd-kill-leader",
	Kind:     "failover",
	Failover: true, Needs: Needs{Topology: TopologyEtcd},
	Marks: []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "(etcd) SIGKILL the Raft leader; the others elect a new one; the old leader restarts from its data dir " +
		"and rejoins as a follower",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	Span:     etcdKillSpan,
	Inject:   runEtcdKillLeader,
}

var faultEtcdPauseLeader = &Fault{
	Name:     "etcd-pause-leader",
	Failover: true, Needs: Needs{Topology: TopologyEtcd},
	Marks: []Mark{{Event: "pause-node", Heal: "resume-node", Cause: CauseSplitBrain}},
	Doc: "(etcd) SIGSTOP the Raft leader for 2-3 election timeouts: the others elect a new leader; SIGCONT and " +
		"the old one, on an older term, steps down",
	PlanStep: planEtcdPause,
	Span:     func(s Step, _ PlanParams) time.Duration { return s.Duration + 3*time.Second },
	Inject:   runEtcdPauseLeader,
}
