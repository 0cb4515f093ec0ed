package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Topology needs: a fault's Needs.Topology is "" for the faults that act on
// "the primary" (a deployment offering cluster.NeedPrimary; with Failover,
// cluster.NeedFailover), NeedNodes for the per-node faults over N
// independent primaries (Redlock's), TopologyAny for the faults that act on
// clients only.
const (
	NeedNodes   = cluster.NeedNodes
	TopologyAny = cluster.NeedAny
)

// Causes of the redlock and stuck-lock faults.
const (
	CauseNodeRestart      = marks.CauseNodeRestart
	CauseClientCrash      = marks.CauseClientCrash
	CausePartialPartition = marks.CausePartialPartition
	// CauseMinorityPartition: some nodes cut off from every client (the
	// docker runtime's partition-minority).
	CauseMinorityPartition = marks.CauseMinorityPartition
)

func dataNodes(c cluster.Runtime) []cluster.Node {
	var out []cluster.Node
	for _, n := range c.Nodes() {
		if n.Kind != cluster.RoleSentinel {
			out = append(out, n)
		}
	}
	return out
}

// pickNode draws a live node from the step's seed-chosen index.
func pickNode(c cluster.Runtime, s Step) (cluster.Node, error) {
	ns := dataNodes(c)
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

func planNode(rng *rand.Rand, _ PlanParams) Step { return Step{Node: rng.IntN(64)} }

var faultKillNode = &Fault{
	Name:  "kill-node",
	Needs: Needs{Topology: NeedNodes},
	Marks: []Mark{{Event: "kill-node", Heal: "restart-node", Cause: CauseNodeRestart}},
	Doc: "(redlock) SIGKILL one node and restart it as a primary, after --delayed-restart: without AOF it " +
		"forgets every lock it granted",
	PlanStep: planNode,
	Span:     func(_ Step, p PlanParams) time.Duration { return 3 * time.Second },
	Inject:   runKillNode,
}

// runKillNode SIGKILLs one redlock node and restarts it with its own config
// (a primary again): without AOF it comes back empty and has forgotten every
// lock it granted. With --delayed-restart D it stays down for D first
// (antirez's remedy: longer than the maximum TTL).
func runKillNode(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	n, err := pickNode(c, s)
	if err != nil {
		return err
	}
	return killAndRestart(ctx, env, n)
}

var faultCrashNode = &Fault{
	Name:  "crash-node",
	Kind:  "failover",
	Needs: Needs{Topology: NeedNodes},
	Marks: []Mark{{Event: "kill-node", Heal: "restart-node", Cause: CauseNodeRestart}},
	Doc: "(redlock) SIGKILL one node, keep it down as long as a Sentinel failover takes (down-after + 1.2 s, or " +
		"--delayed-restart if longer), restart it as a primary: a minority unavailable, then a node that forgot its locks",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		s := planNode(rng, p)
		// SIGKILL to promotion seen is ~2.2 s with down-after 1 s (docs/sweep.md).
		s.Duration = p.DownAfter + 1200*time.Millisecond
		return s
	},
	Span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 2*time.Second },
	Inject: runCrashNode,
}

// runCrashNode is kill-node held down for the step's Duration at least: the
// sweep's failover kind on Redlock, one node of N unavailable for as long as
// a Sentinel failover takes, then back without its locks.
func runCrashNode(ctx context.Context, env Env, s Step) error {
	n, err := pickNode(env.Cluster(), s)
	if err != nil {
		return err
	}
	return killAndRestartAfter(ctx, env, n, s.Duration)
}

func killAndRestart(ctx context.Context, env Env, n cluster.Node) error {
	return killAndRestartAfter(ctx, env, n, 0)
}

// killAndRestartAfter keeps the node down for minDown, or --delayed-restart
// when that is longer.
func killAndRestartAfter(ctx context.Context, env Env, n cluster.Node, minDown time.Duration) error {
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

var faultPauseNode = &Fault{
	Name:  "pause-node",
	Needs: Needs{Topology: NeedNodes},
	Marks: []Mark{{Event: "pause-redlock-node", Heal: "resume-redlock-node", Cause: CauseSplitBrain}},
	Doc:   "(redlock) SIGSTOP one node for a while: a minority down, Redlock keeps granting on the others",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Node: rng.IntN(64), Duration: 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))}
	},
	Span:   HeldSpan,
	Inject: runPauseNode,
}

func runPauseNode(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	n, err := pickNode(c, s)
	if err != nil {
		return err
	}
	return holdPaused(ctx, env, n, "pause-redlock-node", "resume-redlock-node", s.Duration)
}

var faultClockBumpNode = &Fault{
	Name:     "clock-bump-node",
	Kind:     "clock-jump",
	Needs:    Needs{Topology: NeedNodes, FakeTime: true},
	Marks:    []Mark{{Event: "clock-bump-node", Heal: "clock-reset-node", Cause: CauseServerClock}},
	Doc:      "(redlock) move one node's wall clock forward past the TTL (libfaketime): its copies expire early, the majority's do not",
	PlanStep: ClockPlan,
	Span:     HeldSpan,
	Inject:   runClockBumpNode,
}

func runClockBumpNode(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	n, err := pickNode(c, s)
	if err != nil {
		return err
	}
	return bumpNode(ctx, env, n, s)
}

func bumpNode(ctx context.Context, env Env, n cluster.Node, s Step) error {
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

// sides splits the nodes for Kleppmann's scenario: with N = 5, side 0 reaches
// A, B, C and side 1 reaches C, D, E; the middle node C is shared. Even
// clients are side 0, odd clients side 1. Each side reaches exactly a
// majority, and the two majorities meet only in C.
func sides(nodes []cluster.Node) (unreach [2][]string, middle cluster.Node) {
	m := len(nodes) / 2
	for i, n := range nodes {
		switch {
		case i < m:
			unreach[1] = append(unreach[1], n.Addr)
		case i > m:
			unreach[0] = append(unreach[0], n.Addr)
		}
	}
	return unreach, nodes[m]
}

// partialPartition cuts every client off from the other side's nodes and
// returns the heal.
func partialPartition(env Env, ce ClientEnv, tag string) (cluster.Node, func(), error) {
	nodes := dataNodes(env.Cluster())
	unreach, middle := sides(nodes)
	for i := 0; i < ce.NumClients(); i++ {
		if err := ce.SetUnreachable(i, unreach[i%2]); err != nil {
			return middle, nil, err
		}
	}
	Logf(env, tag, middle.Name, cluster.RolePrimary, "even clients cannot reach %s, odd clients cannot reach %s; both reach %s",
		names(nodes, unreach[0]), names(nodes, unreach[1]), middle.Name)
	heal := func() {
		for i := 0; i < ce.NumClients(); i++ {
			_ = ce.SetUnreachable(i, nil)
		}
		Logf(env, "heal-partition-clients", middle.Name, cluster.RolePrimary, "every client reaches every node again")
	}
	return middle, heal, nil
}

func names(nodes []cluster.Node, addrs []string) string {
	var out []string
	for _, a := range addrs {
		for _, n := range nodes {
			if n.Addr == a {
				out = append(out, n.Name)
			}
		}
	}
	return strings.Join(out, ",")
}

var faultRedlockClockJump = &Fault{
	Name:  "redlock-clock-jump",
	Needs: Needs{Topology: NeedNodes, FakeTime: true, ClientPartition: true},
	Marks: []Mark{{Event: "partial-partition", Heal: "heal-partition-clients", Cause: CausePartialPartition}, {Event: "clock-bump-node", Heal: "clock-reset-node", Cause: CauseServerClock}},
	Doc: "(redlock) Kleppmann's scenario: even clients reach A,B,C, odd ones C,D,E; once one side holds the lock, " +
		"C's clock jumps past the TTL and the other side takes C,D,E",
	PlanStep: ClockPlan,
	Span:     func(s Step, p PlanParams) time.Duration { return s.Duration + 2*p.TTL + 3*time.Second },
	Inject:   runRedlockClockJump,
}

// runRedlockClockJump is Kleppmann's scenario from "How to do distributed
// locking": client 1 locks A, B, C (D, E unreachable to it); C's clock jumps
// forward and its copy expires; client 2 locks C, D, E (A, B unreachable to
// it) while client 1 still holds a valid-looking lock. The partial partition
// is the clients' own (they send nothing to the far side's nodes), so no
// message sits in a paused node's socket to be executed later.
func runRedlockClockJump(ctx context.Context, env Env, s Step) error {
	middle, heal, err := splitAndAwaitGrant(ctx, env)
	if heal != nil {
		defer heal()
	}
	if err != nil {
		return err
	}
	return bumpNode(ctx, env, middle, s)
}

// splitAndAwaitGrant sets the clients' partial partition and returns at the
// moment both Redlock scenarios need, the start they share (heal, when not
// nil, undoes the partition): a client granted the lock after the cut, no
// copy of its key left on the nodes its side cannot reach (else the other
// side cannot take a majority when the middle node lets go), and the holder
// just renewed, so the other side has a third of a TTL before the holder's
// next extend finds the middle node's copy gone. Awaiting the grant alone
// showed the lesson in 8 runs of 10 (scripts/reproduction-rates.sh): when
// the pre-cut holder's copies on the far side outlived the new holder's next
// extend, that extend failed, its release of 2 of 5 ended the lease, and the
// other side's grant came after it, legally.
func splitAndAwaitGrant(ctx context.Context, env Env) (middle cluster.Node, heal func(), err error) {
	ce, err := ClientControls(env)
	if err != nil {
		return middle, nil, err
	}
	middle, heal, err = partialPartition(env, ce, "partial-partition")
	if err != nil {
		return middle, heal, err
	}
	actx, cancel := context.WithTimeout(ctx, 3*env.TTL()+4*time.Second)
	defer cancel()
	armed, why := awaitArmedHolder(actx, env)
	if err := ctx.Err(); err != nil {
		return middle, heal, err
	}
	Logf(env, "armed", middle.Name, cluster.RolePrimary, "%s (armed: %v)", why, armed)
	return middle, heal, nil
}

// awaitArmedHolder waits, under the partial partition, for a holder granted
// after the cut whose far side is free of its key, then for its next renewal.
// It reports whether it saw all of that, and what it saw.
func awaitArmedHolder(ctx context.Context, env Env) (bool, string) {
	unreach, _ := sides(dataNodes(env.Cluster()))
	after := nowTrue()
	for {
		if !env.AwaitAcquire(ctx, after) {
			return false, "no grant under the partial partition"
		}
		h, ok := newestHolder(env, after)
		if !ok {
			// The grant's holder has already let go: look only at grants
			// from now on, or AwaitAcquire returns at once on the same one.
			after = nowTrue()
			continue
		}
		after = h.Since
		if !farSideFree(ctx, env, h, unreach[h.Client%2]) {
			if ctx.Err() != nil {
				return false, fmt.Sprintf("client %d holds %s, but the nodes it cannot reach still hold the key", h.Client, h.Key)
			}
			continue
		}
		if awaitRenewal(ctx, env, h) {
			return true, fmt.Sprintf("client %d holds %s on its side's majority, the far side is free, and it just renewed", h.Client, h.Key)
		}
		if ctx.Err() != nil {
			return false, fmt.Sprintf("client %d holds %s but did not renew", h.Client, h.Key)
		}
		// It let go before renewing: wait for the next grant.
	}
}

// awaitRenewal waits for h's next renewal; false when h let go first or ctx
// ended.
func awaitRenewal(ctx context.Context, env Env, h Holder) bool {
	for {
		cur, held := holderSince(env, h)
		if !held {
			return false
		}
		if cur.Renewed > h.Renewed {
			return true
		}
		if Sleep(ctx, 2*time.Millisecond) != nil {
			return false
		}
	}
}

// newestHolder is the holder granted most recently after true time after.
func newestHolder(env Env, after int64) (Holder, bool) {
	var best Holder
	for _, h := range env.Holders() {
		if h.Since > after && h.Since > best.Since {
			best = h
		}
	}
	return best, best.Since != 0
}

// holderSince finds h (same client, key and grant) among the holders now.
func holderSince(env Env, h Holder) (Holder, bool) {
	for _, cur := range env.Holders() {
		if cur.Client == h.Client && cur.Key == h.Key && cur.Since == h.Since {
			return cur, true
		}
	}
	return Holder{}, false
}

// farSideFree polls the nodes h's side cannot reach until none holds h.Key
// (a pre-cut holder's copies there live out their TTL), while h still holds.
func farSideFree(ctx context.Context, env Env, h Holder, far []string) bool {
	c := env.Cluster()
	for {
		if _, held := holderSince(env, h); !held {
			return false
		}
		free := true
		for _, n := range dataNodes(c) {
			if !slices.Contains(far, n.Addr) {
				continue
			}
			if out, err := c.Command(ctx, n.Name, "EXISTS", h.Key); err != nil || strings.TrimSpace(out) != "0" {
				free = false
				break
			}
		}
		if free {
			return true
		}
		if Sleep(ctx, 20*time.Millisecond) != nil {
			return false
		}
	}
}

var faultRedlockRestart = &Fault{
	Name:  "redlock-restart",
	Needs: Needs{Topology: NeedNodes, ClientPartition: true},
	Marks: []Mark{{Event: "partial-partition", Heal: "heal-partition-clients", Cause: CausePartialPartition}, {Event: "kill-node", Heal: "restart-node", Cause: CauseNodeRestart}},
	Doc: "(redlock) the distlock page's example: one side holds A,B,C; C is killed and restarted (after " +
		"--delayed-restart); without persistence it forgot the lock and the other side takes C,D,E",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step { return Step{Duration: p.TTL + time.Second} },
	Span: func(s Step, p PlanParams) time.Duration {
		return s.Duration + 2*p.TTL + 4*time.Second
	},
	Inject: runRedlockRestart,
}

// runRedlockRestart is the distlock page's own example: a client holds A, B, C
// (the partial partition as above); C is killed and restarted without
// persistence, forgets the lock, and the other side takes C, D, E. With AOF
// appendfsync always, or --delayed-restart longer than the TTL, it does not.
func runRedlockRestart(ctx context.Context, env Env, s Step) error {
	middle, heal, err := splitAndAwaitGrant(ctx, env)
	if heal != nil {
		defer heal()
	}
	if err != nil {
		return err
	}
	if err := killAndRestart(ctx, env, middle); err != nil {
		return err
	}
	return Sleep(ctx, s.Duration)
}

// ClockPlan draws a wall-clock jump of twice the TTL and a few seconds
// more, held for a TTL and a second or two, on a node drawn at random.
func ClockPlan(rng *rand.Rand, p PlanParams) Step {
	secs := 2*p.TTL.Seconds() + float64(rng.IntN(5))
	return Step{Node: rng.IntN(64), Duration: p.TTL + time.Second + time.Duration(rng.Int64N(int64(time.Second))), Offset: fmt.Sprintf("+%.0f", secs)}
}

// pickRenewedHolder waits for a holder whose lease has been renewed at least
// once.
func pickRenewedHolder(ctx context.Context, env Env) (Holder, error) {
	for {
		for _, h := range env.Holders() {
			if h.Renewed > 0 {
				return h, nil
			}
		}
		if err := Sleep(ctx, 2*time.Millisecond); err != nil {
			return Holder{}, fmt.Errorf("no holder renewed its lease: %w", err)
		}
	}
}

// minority picks a minority of the nodes, (N-1)/2 of them (2 of 5), from the
// step's seed-drawn index onwards: consecutive in name order, wrapping.
func minority(nodes []cluster.Node, s Step) []cluster.Node {
	k := (len(nodes) - 1) / 2
	var out []cluster.Node
	for j := 0; j < k; j++ {
		out = append(out, nodes[(s.Node+j)%len(nodes)])
	}
	return out
}

var faultPartitionMinority = &Fault{
	Name:  "partition-minority",
	Needs: Needs{Topology: NeedNodes, Runtime: "docker"},
	Marks: []Mark{{Event: "isolate-node", Heal: "heal-isolate-node", Cause: CauseMinorityPartition}},
	Doc: "(redlock, docker runtime) cut a minority of the nodes (2 of 5) off from every client for two to three " +
		"TTLs, then Restore: the majority still grants, extends and releases, so the lock stays valid",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Node: rng.IntN(64), Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1))}
	},
	Span:   HeldSpan,
	Inject: runPartitionMinority,
}

// runPartitionMinority cuts a minority of the Redlock nodes off from every
// client (cluster.Isolator: the docker runtime disconnects their containers
// from every network, so packets to them are dropped) for the step's
// duration, then heals them. The majority left reachable still decides:
// acquires, extends and releases go on succeeding there. The heal runs even
// when the run is interrupted, since nothing else knows the nodes are cut off.
func runPartitionMinority(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	iso, ok := c.(cluster.Isolator)
	if !ok {
		return fmt.Errorf("this runtime cannot cut a node off from the clients: run with --runtime docker")
	}
	nodes := dataNodes(c)
	cut := minority(nodes, s)
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
