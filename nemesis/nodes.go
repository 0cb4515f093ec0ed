package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/marks"
)

// The mechanisms over one node of N and over a minority of them (Jepsen's
// targets "one" and "minority"), for a deployment of independent nodes
// (cluster.NeedNodes): kill one and restart it, pause one, move one's clock,
// cut a minority off from the clients. The deployment that offers
// NeedNodes declares its fault entries over them in its own folder, beside
// the scenarios only it has.

// Topology needs: a fault's Needs.Topology is "" for the faults that act on
// "the primary" (a deployment offering cluster.NeedPrimary; with Failover,
// cluster.NeedFailover), NeedNodes for the per-node faults over N
// independent primaries, TopologyAny for the faults that act on
// clients only.
const (
	NeedNodes   = cluster.NeedNodes
	TopologyAny = cluster.NeedAny
)

// Causes of the faults over nodes and of the stuck-lock faults.
const (
	CauseNodeRestart      = marks.CauseNodeRestart
	CauseClientCrash      = marks.CauseClientCrash
	CausePartialPartition = marks.CausePartialPartition
	// CauseMinorityPartition: some nodes cut off from every client (the
	// docker runtime's partition-minority).
	CauseMinorityPartition = marks.CauseMinorityPartition
)

// DataNodes are the runtime's nodes that hold data: every node but the
// Sentinels.
func DataNodes(c cluster.Runtime) []cluster.Node {
	var out []cluster.Node
	for _, n := range c.Nodes() {
		if !n.Watches() {
			out = append(out, n)
		}
	}
	return out
}

// PickNode draws a live node from the step's seed-chosen index.
func PickNode(c cluster.Runtime, s Step) (cluster.Node, error) {
	ns := DataNodes(c)
	if len(ns) == 0 {
		return cluster.Node{}, fmt.Errorf("no data nodes")
	}
	i := s.Node % len(ns)
	for k := 0; k < len(ns); k++ {
		n := ns[(i+k)%len(ns)]
		if n.PID != 0 && !n.Paused {
			return n, nil
		}
	}
	return cluster.Node{}, fmt.Errorf("every node is down or paused")
}

// PlanNode draws the node a step acts on (PickNode takes it modulo the
// nodes there are).
func PlanNode(rng *rand.Rand, _ PlanParams) Step { return Step{Node: rng.IntN(64)} }

// KillAndRestart SIGKILLs n and restarts it with its own config (a primary
// again) after minDown, or --delayed-restart when that is longer: without AOF
// it comes back empty and has forgotten every lock it granted.
func KillAndRestart(ctx context.Context, env Env, n cluster.Node, minDown time.Duration) error {
	c := env.Cluster()
	var delay time.Duration
	if ce, ok := env.(ClientEnv); ok {
		delay = ce.DelayedRestart()
	}
	delay = max(delay, minDown)
	Logf(env, "kill-node", n.Name, cluster.RolePrimary, "SIGKILL %s (pid %d); restart after %v", n.Name, n.PID, delay)
	if err := c.Kill(n.Name); err != nil {
		return err
	}
	sleepErr := Sleep(ctx, delay)
	if err := c.Restart(context.WithoutCancel(ctx), n.Name, cluster.WithOldConfig); err != nil {
		return err
	}
	Logf(env, "restart-node", n.Name, cluster.RolePrimary, "%s restarted as an independent primary (what it kept depends on --appendonly)", n.Name)
	return sleepErr
}

// PauseNode SIGSTOPs n for d, then SIGCONT; pause and resume are the
// events logged.
func PauseNode(ctx context.Context, env Env, n cluster.Node, pause, resume string, d time.Duration) error {
	return holdPaused(ctx, env, n, pause, resume, d)
}

// BumpNodeClock moves n's wall clock by the step's Offset for its Duration,
// then back to true time.
func BumpNodeClock(ctx context.Context, env Env, n cluster.Node, s Step) error {
	c := env.Cluster()
	// Logged before the write (see cluster.Local.setClock): a grant the jump
	// allowed while SetClockOffset still confirmed it is inside the window.
	Logf(env, "clock-bump-node", n.Name, cluster.RolePrimary, "wall clock of %s moved %ss: its copies of the locks expire now", n.Name, s.Offset)
	if err := c.SetClockOffset(n.Name, s.Offset); err != nil {
		return err
	}
	sleepErr := Sleep(ctx, s.Duration)
	if err := c.SetClockOffset(n.Name, ""); err != nil {
		return err
	}
	Logf(env, "clock-reset-node", n.Name, cluster.RolePrimary, "wall clock of %s back to true time", n.Name)
	return sleepErr
}

// ClockPlan draws a wall-clock jump of twice the TTL and a few seconds
// more, held for a TTL and a second or two, on a node drawn at random.
func ClockPlan(rng *rand.Rand, p PlanParams) Step {
	secs := 2*p.TTL.Seconds() + float64(rng.IntN(5))
	return Step{Node: rng.IntN(64), Duration: p.TTL + time.Second + time.Duration(rng.Int64N(int64(time.Second))), Offset: fmt.Sprintf("+%.0f", secs)}
}

// Minority picks a minority of the nodes, (N-1)/2 of them (2 of 5), from the
// step's seed-drawn index onwards: consecutive in name order, wrapping.
func Minority(nodes []cluster.Node, s Step) []cluster.Node {
	k := (len(nodes) - 1) / 2
	var out []cluster.Node
	for j := 0; j < k; j++ {
		out = append(out, nodes[(s.Node+j)%len(nodes)])
	}
	return out
}

// PartitionMinority cuts a minority of the nodes (Minority) off from every
// client (cluster.Isolator: the docker runtime disconnects their containers
// from every network, so packets to them are dropped) for the step's
// duration, then heals them. The majority left reachable still decides:
// acquires, extends and releases go on succeeding there. The heal runs even
// when the run is interrupted, since nothing else knows the nodes are cut off.
func PartitionMinority(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	iso, ok := c.(cluster.Isolator)
	if !ok {
		return fmt.Errorf("this runtime cannot cut a node off from the clients: run with --runtime docker")
	}
	nodes := DataNodes(c)
	cut := Minority(nodes, s)
	if len(cut) == 0 {
		return fmt.Errorf("%d node(s) have no minority to cut off: want --nodes 3 or more", len(nodes))
	}
	var done []cluster.Node
	heal := func() error {
		var errs []error
		for _, n := range done {
			if err := iso.Heal(n.Name); err != nil {
				errs = append(errs, err)
				continue
			}
			Logf(env, "heal-isolate-node", n.Name, cluster.RolePrimary, "%s reconnected: the clients reach it again", n.Name)
		}
		return errors.Join(errs...)
	}
	for _, n := range cut {
		Logf(env, "isolate-node", n.Name, cluster.RolePrimary, "cut %s off from every client for %v (%d of %d nodes cut off: a majority remains)",
			n.Name, s.Duration.Round(time.Millisecond), len(cut), len(nodes))
		done = append(done, n)
		if err := iso.Isolate(n.Name); err != nil {
			return errors.Join(err, heal())
		}
	}
	sleepErr := Sleep(ctx, s.Duration)
	if err := heal(); err != nil {
		return err
	}
	return sleepErr
}
