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

// faultFailoverCoordinatedForceSlowLink is the forced switch with the
// target behind on a slow link (the primary's replication proxy) rather
// than paused: the bytes of the grant are still in the network when the
// timeout expires.
var faultFailoverCoordinatedForceSlowLink = &nemesis.Fault{
	Name:     "failover-coordinated-force-slow-link",
	Failover: true, Needs: nemesis.Needs{Replicas: 1, Topology: Topology, NetProxy: true, DialMap: true},
	Marks: []nemesis.Mark{{Event: "failover-coordinated-force-slow-link", Heal: "coordinated-done", Cause: nemesis.CauseFailover, Moment: marks.MomentGrant}},
	Doc: "the forced switch with the replica behind on a slow link instead of paused: the primary's replication links " +
		"delayed --net-latency ± --net-jitter each way (--net-proxy; the clients' path untouched), a fresh grant, then " +
		"FAILOVER TO ... TIMEOUT 300 FORCE: a link slower than the timeout holds the grant's bytes in the network, not in " +
		"the target's socket, and the target promotes itself without them",
	PlanStep: nemesis.NetStep,
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return 2*p.TTL + 8*time.Second },
	Inject:   nemesis.CoordinatedSwitchSlowLink,
	Restore:  nemesis.ClearToxics,
}

func init() {
	nemesis.Register(faultPromoteReplica, faultFailoverCoordinatedForce, faultFailoverCoordinatedForceSlowLink)
}
