package zookeeper

import (
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
)

// ZooKeeper's faults: the leader mechanisms of package nemesis (kill, pause,
// isolate) over the Zab leader, with ZooKeeper's timing.

// killSpan covers the followers giving the leader up (syncLimit ticks,
// 1 s), the election, and the old leader's JVM restarting, reloading its
// snapshot and log and syncing as a follower (2-4 s on the 2-core machine).
func killSpan(nemesis.Step, nemesis.PlanParams) time.Duration { return 8 * time.Second }

// planPause pauses the leader for two to three election timeouts.
func planPause(rng *rand.Rand, _ nemesis.PlanParams) nemesis.Step {
	return nemesis.Step{Duration: 2*ElectionTimeout + time.Duration(rng.Int64N(int64(ElectionTimeout)))}
}

// planIsolate keeps the leader out for longer than a session: the TTL (the
// session timeout zk-lock asks for) and one to two election timeouts more,
// so that a client that stayed with the old leader would lose its session;
// it keeps it only by moving to a member of the majority.
func planIsolate(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
	return nemesis.Step{Duration: p.TTL + ElectionTimeout + time.Duration(rng.Int64N(int64(ElectionTimeout)))}
}

var faultPartitionLeader = &nemesis.Fault{
	Name: "zk-partition-leader",

	As:       "partition-leader",
	Failover: true, Needs: nemesis.Needs{Topology: Topology, Runtime: "docker"},
	Marks: []nemesis.Mark{{Event: "isolate-leader", Heal: "heal-isolate-leader", Cause: nemesis.CauseSplitBrain}},
	Doc: "(zookeeper, docker runtime) cut the Zab leader off from the other members and from the clients for longer " +
		"than a session: the followers elect a new leader, the old one's clients move their sessions to it or lose them; heal and it follows",
	PlanStep: planIsolate,
	Span:     func(s nemesis.Step, _ nemesis.PlanParams) time.Duration { return s.Duration + 4*time.Second },
	// The followers give the silent leader up after syncLimit ticks; each
	// of its clients moves its session to a member of the majority within
	// the session timeout, or loses it (the new leader expires it and
	// deletes its znodes).
	Inject: nemesis.IsolateLeader("ZooKeeper", ElectionTimeout),
}

var faultKillLeader = &nemesis.Fault{
	Name: "zk-kill-leader",

	As:       "kill-leader",
	Kind:     "failover",
	Failover: true, Needs: nemesis.Needs{Topology: Topology},
	Marks: []nemesis.Mark{{Event: "kill", Heal: "restart", Cause: nemesis.CauseFailover}},
	Doc: "(zookeeper) SIGKILL the Zab leader; the followers give it up after syncLimit ticks and elect another; " +
		"the old leader restarts from its data dir and rejoins as a follower",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     killSpan,
	Inject:   nemesis.KillLeader("ZooKeeper"),
}

var faultPauseLeader = &nemesis.Fault{
	Name: "zk-pause-leader",

	As:       "pause-leader",
	Failover: true, Needs: nemesis.Needs{Topology: Topology},
	Marks: []nemesis.Mark{{Event: "pause-node", Heal: "resume-node", Cause: nemesis.CauseSplitBrain}},
	Doc: "(zookeeper) SIGSTOP the Zab leader for 2-3 election timeouts (syncLimit ticks): the followers elect a new " +
		"leader; SIGCONT and the old one, on an older epoch, steps down",
	PlanStep: planPause,
	Span:     func(s nemesis.Step, _ nemesis.PlanParams) time.Duration { return s.Duration + 4*time.Second },
	Inject:   nemesis.PauseLeader("ZooKeeper", ElectionTimeout),
}

func init() { nemesis.Register(faultKillLeader, faultPauseLeader, faultPartitionLeader) }
