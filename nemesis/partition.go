package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

var faultPartition = &Fault{
	Name: "partition",

	As:       "partition-leader",
	Failover: true, Needs: Needs{Replicas: 1, Runtime: "docker"},
	Marks: []Mark{{Event: "partition", Heal: "heal-partition", Cause: CauseSplitBrain}},
	Doc: "after a fresh grant, cut the primary off from the Sentinels and replicas while the clients still reach it " +
		"(docker runtime only), past down-after: the majority promotes a replica, the old primary keeps granting; heal and it is demoted",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: 2*p.DownAfter + 2*time.Second + time.Duration(rng.Int64N(int64(time.Second)))}
	},
	Span:   func(s Step, p PlanParams) time.Duration { return s.Duration + 4*time.Second },
	Inject: runPartition,
}

// runPartition needs a runtime that can cut links (cluster.Partitioner: the
// docker runtime); the heal runs even when the run is interrupted, since
// nothing else knows the node is cut off.
func runPartition(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	pc, err := partitioner(c, "node")
	if err != nil {
		return err
	}
	// Cut a lease just granted, so that its holder is mid-job when the
	// clients follow +switch-master, about 3.4 s later (10 runs of seed 1 on
	// docker). Cut at a random moment, the switch of seed 1 came near the end
	// of the first 6.2 s hold; landing just after its release, every client
	// moved to the promoted replica with nobody holding, and the run checked
	// valid (CI, once). Holds of longJob outlast 2 x TTL + 2 s, hence the wait.
	why, err := awaitFreshGrant(ctx, env, 2*env.TTL()+8*time.Second)
	if err != nil {
		return err
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	Logf(env, "partition", p.Name, cluster.RolePrimary, "cut %s off from the Sentinels and replicas for %v, the clients still reach it; %s", p.Name, s.Duration.Round(time.Millisecond), why)
	if err := partitionNode(pc, p.Name); err != nil {
		return err
	}
	sleepErr := Sleep(ctx, s.Duration)
	if err := pc.Heal(p.Name); err != nil {
		return err
	}
	Logf(env, "heal-partition", p.Name, cluster.RolePrimary, "%s reconnected", p.Name)
	if sleepErr != nil {
		return sleepErr
	}
	if np, err := c.Primary(ctx); err == nil && np.Name != p.Name {
		Logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s while %s was cut off", np.Name, p.Name)
	}
	return nil
}

// partitioner is the runtime's cluster.Partitioner, or the error that names
// the fix (what: "node", "member").
func partitioner(c cluster.Runtime, what string) (cluster.Partitioner, error) {
	pc, ok := c.(cluster.Partitioner)
	if !ok {
		return nil, fmt.Errorf("this runtime cannot partition a %s: run with --runtime docker", what)
	}
	return pc, nil
}

// partitionNode cuts a node off; a cut that fails half-way is healed at once,
// since nothing else knows what it left cut.
func partitionNode(pc cluster.Partitioner, node string) error {
	if err := pc.Partition(node); err != nil {
		return errors.Join(err, pc.Heal(node))
	}
	return nil
}
