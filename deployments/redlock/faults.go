package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// Redlock's faults: the mechanisms of package nemesis over one node of N
// and over a minority (kill, crash, pause, clock bump, partition), and the
// two scenarios of the Redlock debate only N independent primaries have:
// Kleppmann's clock jump and the distlock page's restart, each under the
// clients' partial partition.

var faultKillNode = &nemesis.Fault{
	Name: "kill-node",

	As:    "kill-one",
	Needs: nemesis.Needs{Topology: nemesis.NeedNodes},
	Marks: []nemesis.Mark{{Event: "kill-node", Heal: "restart-node", Cause: nemesis.CauseNodeRestart}},
	Doc: "(redlock) SIGKILL one node and restart it as a primary, after --delayed-restart: without AOF it " +
		"forgets every lock it granted",
	PlanStep: nemesis.PlanNode,
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return 3 * time.Second },
	Inject:   runKillNode,
}

// runKillNode SIGKILLs one node and restarts it with its own config
// (a primary again): without AOF it comes back empty and has forgotten every
// lock it granted. With --delayed-restart D it stays down for D first
// (antirez's remedy: longer than the maximum TTL).
func runKillNode(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	c := env.Cluster()
	n, err := nemesis.PickNode(c, s)
	if err != nil {
		return err
	}
	return nemesis.KillAndRestart(ctx, env, n, 0)
}

var faultCrashNode = &nemesis.Fault{
	Name:  "crash-node",
	Kind:  "failover",
	Needs: nemesis.Needs{Topology: nemesis.NeedNodes},
	Marks: []nemesis.Mark{{Event: "kill-node", Heal: "restart-node", Cause: nemesis.CauseNodeRestart}},
	Doc: "(redlock) SIGKILL one node, keep it down as long as a Sentinel failover takes (down-after + 1.2 s, or " +
		"--delayed-restart if longer), restart it as a primary: a minority unavailable, then a node that forgot its locks",
	PlanStep: func(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
		s := nemesis.PlanNode(rng, p)
		// SIGKILL to promotion seen is ~2.2 s with down-after 1 s (docs/sweep.md).
		s.Duration = p.DownAfter + 1200*time.Millisecond
		return s
	},
	Span:   func(s nemesis.Step, _ nemesis.PlanParams) time.Duration { return s.Duration + 2*time.Second },
	Inject: runCrashNode,
}

// runCrashNode is kill-node held down for the step's Duration at least: the
// sweep's failover kind on Redlock, one node of N unavailable for as long as
// a Sentinel failover takes, then back without its locks.
func runCrashNode(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	n, err := nemesis.PickNode(env.Cluster(), s)
	if err != nil {
		return err
	}
	return nemesis.KillAndRestart(ctx, env, n, s.Duration)
}

var faultPauseNode = &nemesis.Fault{
	Name: "pause-node",

	As:    "pause-one",
	Needs: nemesis.Needs{Topology: nemesis.NeedNodes},
	Marks: []nemesis.Mark{{Event: "pause-redlock-node", Heal: "resume-redlock-node", Cause: nemesis.CauseSplitBrain}},
	Doc:   "(redlock) SIGSTOP one node for a while: a minority down, Redlock keeps granting on the others",
	PlanStep: func(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
		return nemesis.Step{Node: rng.IntN(64), Duration: 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))}
	},
	Span:   nemesis.HeldSpan,
	Inject: runPauseNode,
}

func runPauseNode(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	c := env.Cluster()
	n, err := nemesis.PickNode(c, s)
	if err != nil {
		return err
	}
	return nemesis.PauseNode(ctx, env, n, "pause-redlock-node", "resume-redlock-node", s.Duration)
}

var faultClockBumpNode = &nemesis.Fault{
	Name: "clock-bump-node",

	As:       "clock-bump-one",
	Kind:     "clock-jump",
	Needs:    nemesis.Needs{Topology: nemesis.NeedNodes, FakeTime: true},
	Marks:    []nemesis.Mark{{Event: "clock-bump-node", Heal: "clock-reset-node", Cause: nemesis.CauseServerClock}},
	Doc:      "(redlock) move one node's wall clock forward past the TTL (libfaketime): its copies expire early, the majority's do not",
	PlanStep: nemesis.ClockPlan,
	Span:     nemesis.HeldSpan,
	Inject:   runClockBumpNode,
}

func runClockBumpNode(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	c := env.Cluster()
	n, err := nemesis.PickNode(c, s)
	if err != nil {
		return err
	}
	return nemesis.BumpNodeClock(ctx, env, n, s)
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
func partialPartition(env nemesis.Env, ce nemesis.ClientEnv, tag string) (cluster.Node, func(), error) {
	nodes := nemesis.DataNodes(env.Cluster())
	unreach, middle := sides(nodes)
	for i := 0; i < ce.NumClients(); i++ {
		if err := ce.SetUnreachable(i, unreach[i%2]); err != nil {
			return middle, nil, err
		}
	}
	nemesis.Logf(env, tag, middle.Name, cluster.RolePrimary, "even clients cannot reach %s, odd clients cannot reach %s; both reach %s",
		names(nodes, unreach[0]), names(nodes, unreach[1]), middle.Name)
	heal := func() {
		for i := 0; i < ce.NumClients(); i++ {
			_ = ce.SetUnreachable(i, nil)
		}
		nemesis.Logf(env, "heal-partition-clients", middle.Name, cluster.RolePrimary, "every client reaches every node again")
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

var faultRedlockClockJump = &nemesis.Fault{
	Name:  "redlock-clock-jump",
	Needs: nemesis.Needs{Topology: nemesis.NeedNodes, FakeTime: true, ClientPartition: true},
	Marks: []nemesis.Mark{{Event: "partial-partition", Heal: "heal-partition-clients", Cause: nemesis.CausePartialPartition}, {Event: "clock-bump-node", Heal: "clock-reset-node", Cause: nemesis.CauseServerClock}},
	Doc: "(redlock) Kleppmann's scenario: even clients reach A,B,C, odd ones C,D,E; once one side holds the lock, " +
		"C's clock jumps past the TTL and the other side takes C,D,E",
	PlanStep: nemesis.ClockPlan,
	Span:     func(s nemesis.Step, p nemesis.PlanParams) time.Duration { return s.Duration + 2*p.TTL + 3*time.Second },
	Inject:   runRedlockClockJump,
}

// runRedlockClockJump is Kleppmann's scenario from "How to do distributed
// locking": client 1 locks A, B, C (D, E unreachable to it); C's clock jumps
// forward and its copy expires; client 2 locks C, D, E (A, B unreachable to
// it) while client 1 still holds a valid-looking lock. The partial partition
// is the clients' own (they send nothing to the far side's nodes), so no
// message sits in a paused node's socket to be executed later.
func runRedlockClockJump(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	middle, heal, err := splitAndAwaitGrant(ctx, env)
	if heal != nil {
		defer heal()
	}
	if err != nil {
		return err
	}
	return nemesis.BumpNodeClock(ctx, env, middle, s)
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
func splitAndAwaitGrant(ctx context.Context, env nemesis.Env) (middle cluster.Node, heal func(), err error) {
	ce, err := nemesis.ClientControls(env)
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
	nemesis.Logf(env, "armed", middle.Name, cluster.RolePrimary, "%s (armed: %v)", why, armed)
	return middle, heal, nil
}

// awaitArmedHolder waits, under the partial partition, for a holder granted
// after the cut whose far side is free of its key, then for its next renewal.
// It reports whether it saw all of that, and what it saw.
func awaitArmedHolder(ctx context.Context, env nemesis.Env) (bool, string) {
	unreach, _ := sides(nemesis.DataNodes(env.Cluster()))
	after := truetime.Now()
	for {
		if !env.AwaitAcquire(ctx, after) {
			return false, "no grant under the partial partition"
		}
		h, ok := nemesis.NewestHolder(env, after)
		if !ok {
			// The grant's holder has already let go: look only at grants
			// from now on, or AwaitAcquire returns at once on the same one.
			after = truetime.Now()
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
func awaitRenewal(ctx context.Context, env nemesis.Env, h nemesis.Holder) bool {
	for {
		cur, held := holderSince(env, h)
		if !held {
			return false
		}
		if cur.Renewed > h.Renewed {
			return true
		}
		if nemesis.Sleep(ctx, 2*time.Millisecond) != nil {
			return false
		}
	}
}

// holderSince finds h (same client, key and grant) among the holders now.
func holderSince(env nemesis.Env, h nemesis.Holder) (nemesis.Holder, bool) {
	for _, cur := range env.Holders() {
		if cur.Client == h.Client && cur.Key == h.Key && cur.Since == h.Since {
			return cur, true
		}
	}
	return nemesis.Holder{}, false
}

// farSideFree polls the nodes h's side cannot reach until none holds h.Key
// (a pre-cut holder's copies there live out their TTL), while h still holds.
func farSideFree(ctx context.Context, env nemesis.Env, h nemesis.Holder, far []string) bool {
	c := env.Cluster()
	for {
		if _, held := holderSince(env, h); !held {
			return false
		}
		free := true
		for _, n := range nemesis.DataNodes(c) {
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
		if nemesis.Sleep(ctx, 20*time.Millisecond) != nil {
			return false
		}
	}
}

var faultRedlockRestart = &nemesis.Fault{
	Name:  "redlock-restart",
	Needs: nemesis.Needs{Topology: nemesis.NeedNodes, ClientPartition: true},
	Marks: []nemesis.Mark{{Event: "partial-partition", Heal: "heal-partition-clients", Cause: nemesis.CausePartialPartition}, {Event: "kill-node", Heal: "restart-node", Cause: nemesis.CauseNodeRestart}},
	Doc: "(redlock) the distlock page's example: one side holds A,B,C; C is killed and restarted (after " +
		"--delayed-restart); without persistence it forgot the lock and the other side takes C,D,E",
	PlanStep: func(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
		return nemesis.Step{Duration: p.TTL + time.Second}
	},
	Span: func(s nemesis.Step, p nemesis.PlanParams) time.Duration {
		return s.Duration + 2*p.TTL + 4*time.Second
	},
	Inject: runRedlockRestart,
}

// runRedlockRestart is the distlock page's own example: a client holds A, B, C
// (the partial partition as above); C is killed and restarted without
// persistence, forgets the lock, and the other side takes C, D, E. With AOF
// appendfsync always, or --delayed-restart longer than the TTL, it does not.
func runRedlockRestart(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	middle, heal, err := splitAndAwaitGrant(ctx, env)
	if heal != nil {
		defer heal()
	}
	if err != nil {
		return err
	}
	if err := nemesis.KillAndRestart(ctx, env, middle, 0); err != nil {
		return err
	}
	return nemesis.Sleep(ctx, s.Duration)
}

var faultPartitionMinority = &nemesis.Fault{
	Name:  "partition-minority",
	Needs: nemesis.Needs{Topology: nemesis.NeedNodes, Runtime: "docker"},
	Marks: []nemesis.Mark{{Event: "isolate-node", Heal: "heal-isolate-node", Cause: nemesis.CauseMinorityPartition}},
	Doc: "(redlock, docker runtime) cut a minority of the nodes (2 of 5) off from every client for two to three " +
		"TTLs, then Restore: the majority still grants, extends and releases, so the lock stays valid",
	PlanStep: func(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
		return nemesis.Step{Node: rng.IntN(64), Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1))}
	},
	Span:   nemesis.HeldSpan,
	Inject: nemesis.PartitionMinority,
}

func init() {
	nemesis.Register(faultKillNode, faultCrashNode, faultPauseNode, faultClockBumpNode,
		faultRedlockClockJump, faultRedlockRestart, faultPartitionMinority)
}
