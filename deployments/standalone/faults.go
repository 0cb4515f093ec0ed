package standalone

import (
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// standalone's faults: the operator's promotion (the failover race done by
// hand, nemesis.PromoteReplica, over the service address this runtime can
// move) and the forced coordinated switch (nemesis.CoordinatedSwitch), which
// only a primary no Sentinel watches can be given: Sentinel's own switch
// takes no FORCE, and a FAILOVER it did not order would be fought over by
// its next check. The graceful switch and every other Valkey fault are
// nemesis's own, over the primary.

var faultPromoteReplica = &nemesis.Fault{
	Name: "promote-replica",
	Kind: "failover", On: []string{Topology},
	Failover: true, Needs: nemesis.Needs{Replicas: 1, Topology: Topology},
	Marks: []nemesis.Mark{{Event: "promote-replica", Heal: "promoted", Cause: nemesis.CauseFailover}},
	Doc: "an operator's manual promotion (standalone): the replicas' links cut, a fresh grant on the primary alone, " +
		"then REPLICAOF NO ONE on a replica that never saw it, the service address moved to it, the old primary demoted",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return 2*p.TTL + 6*time.Second },
	Inject:   nemesis.PromoteReplica,
}

var faultFailoverCoordinatedForce = &nemesis.Fault{
	Name:     "failover-coordinated-force",
	Failover: true, Needs: nemesis.Needs{Replicas: 1, Topology: Topology},
	Marks: []nemesis.Mark{{Event: "failover-coordinated-force", Heal: "coordinated-done", Cause: nemesis.CauseFailover, Moment: marks.MomentGrant}},
	Doc: "the same switch with the replica paused behind the fresh grant: FAILOVER TO ... TIMEOUT 300 FORCE on the " +
		"primary switches when the timeout expires (a paused target still reads the stream waiting in its socket first)",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return 2*p.TTL + 8*time.Second },
	Inject:   nemesis.CoordinatedSwitch(true),
}

func init() {
	nemesis.Register(faultPromoteReplica, faultFailoverCoordinatedForce)
}
