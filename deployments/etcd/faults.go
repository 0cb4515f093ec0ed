package etcd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
)

// etcd's faults: the leader mechanisms of package nemesis (kill, pause,
// partition) over the Raft leader, with etcd's timing; and the clock bump,
// declared so that its refusal has a name and a doc.

// killSpan covers the election (about 1-2 s with a 1 s election timeout)
// and the old leader's restart and catch-up.
func killSpan(nemesis.Step, nemesis.PlanParams) time.Duration { return 6 * time.Second }

// planPause keeps the leader out for two to three election timeouts.
func planPause(rng *rand.Rand, _ nemesis.PlanParams) nemesis.Step {
	return nemesis.Step{Duration: 2*ElectionTimeout + time.Duration(rng.Int64N(int64(ElectionTimeout)))}
}

var faultKillLeader = &nemesis.Fault{
	Name: "etcd-kill-leader",

	As:       "kill-leader",
	Kind:     "failover",
	Failover: true, Needs: nemesis.Needs{Topology: Topology},
	Marks: []nemesis.Mark{{Event: "kill", Heal: "restart", Cause: nemesis.CauseFailover}},
	Doc: "(etcd) SIGKILL the Raft leader; the others elect a new one; the old leader restarts from its data dir " +
		"and rejoins as a follower",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     killSpan,
	Inject:   nemesis.KillLeader("etcd"),
}

var faultPauseLeader = &nemesis.Fault{
	Name: "etcd-pause-leader",

	As:       "pause-leader",
	Failover: true, Needs: nemesis.Needs{Topology: Topology},
	Marks: []nemesis.Mark{{Event: "pause-node", Heal: "resume-node", Cause: nemesis.CauseSplitBrain}},
	Doc: "(etcd) SIGSTOP the Raft leader for 2-3 election timeouts: the others elect a new leader; SIGCONT and " +
		"the old one, on an older term, steps down",
	PlanStep: planPause,
	Span:     func(s nemesis.Step, _ nemesis.PlanParams) time.Duration { return s.Duration + 3*time.Second },
	Inject:   nemesis.PauseLeader("etcd", ElectionTimeout),
}

var faultPartitionMember = &nemesis.Fault{
	Name: "etcd-partition-member",

	As:       "partition-leader",
	Failover: true, Needs: nemesis.Needs{Topology: Topology, Runtime: "docker"},
	Marks: []nemesis.Mark{{Event: "partition", Heal: "heal-partition", Cause: nemesis.CauseSplitBrain}},
	Doc: "(etcd, docker runtime) cut the Raft leader off from the other members for 2-3 election timeouts while the " +
		"clients still reach it: the majority elects a new leader, the old one cannot commit; heal and it steps down",
	PlanStep: planPause,
	Span:     func(s nemesis.Step, _ nemesis.PlanParams) time.Duration { return s.Duration + 3*time.Second },
	// With etcd's check-quorum the cut-off leader steps down by itself.
	Inject: nemesis.PartitionLeader("etcd", ElectionTimeout),
}

var faultClockBump = &nemesis.Fault{
	Name: "etcd-clock-bump",

	As:    "clock-bump-leader",
	Needs: nemesis.Needs{Topology: Topology, FakeTime: true},
	Marks: []nemesis.Mark{{Event: "clock-bump", Heal: "clock-reset", Cause: nemesis.CauseServerClock}},
	Doc: "(etcd) move a member's wall clock forward: refused, libfaketime cannot move a Go program's clock " +
		"(it reads the vDSO, not libc; verified), and etcd's leases run on monotonic time",
	PlanStep: nemesis.ClockPlan,
	Span:     nemesis.HeldSpan,
	Inject:   runClockBump,
}

// runClockBump never gets this far: runner.Config.Validate refuses a
// FakeTime fault on the etcd topology (ErrClock), because libfaketime
// cannot move a Go program's clock. It is kept as a fault so that the
// refusal has a name and a doc.
func runClockBump(_ context.Context, _ nemesis.Env, s nemesis.Step) error {
	return fmt.Errorf("bump by %ss: %w", s.Offset, ErrClock)
}

func init() {
	nemesis.Register(faultKillLeader, faultPauseLeader, faultPartitionMember, faultClockBump)
}
