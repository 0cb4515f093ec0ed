package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// FailoverSpan covers detection (down-after), election and the old node's rejoin.
func FailoverSpan(_ Step, p PlanParams) time.Duration { return p.DownAfter + 5*time.Second }

// failoverAndRejoin waits for Sentinel to promote a replica away from old,
// logs it, and restarts old as a replica of the new primary.
func failoverAndRejoin(ctx context.Context, env Env, old cluster.Node) error {
	c := env.Cluster()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	np, err := c.WaitFailover(wctx, old.Name)
	if err != nil {
		return err
	}
	Logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s; %s was primary", np.Name, old.Name)
	if err := c.Restart(ctx, old.Name, cluster.AsReplica); err != nil {
		return err
	}
	Logf(env, "restart", old.Name, cluster.RoleReplica, "%s restarted as a replica of %s", old.Name, np.Name)
	return nil
}

var faultKillPrimary = &Fault{
	Name: "kill-primary",

	As:       "kill-leader",
	Cycle:    4 * time.Second,
	Failover: true, Needs: Needs{Replicas: 1},
	Marks:    []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc:      "SIGKILL the primary; Sentinel promotes a replica; the old primary rejoins as a replica",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	Span:     FailoverSpan,
	Inject:   runKillPrimary,
}

func runKillPrimary(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	Logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d)", p.Name, p.PID)
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	return failoverAndRejoin(ctx, env, p)
}

var faultCutReplication = &Fault{
	Name: "cut-replication",
	// Fresh grant ~0.1-3 s, SIGKILL to promotion ~2.1 s, rejoin and full
	// resync ~1.2 s (the replica loads the RDB at its next 1 s cron).
	Cycle:    5 * time.Second,
	Failover: true, Needs: Needs{Replicas: 1},
	Marks: []Mark{{Event: "cut-replication", Heal: "heal-replication", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "the failover race: pause the replicas, drop their links, let a client acquire on the primary alone, " +
		"SIGKILL the primary, resume the replicas 50ms later; the promoted replica never saw the lock",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	Span:     FailoverSpan,
	Inject:   runCutReplication,
}

// runCutReplication is the sequence that reproduced the double grant 8 of 8
// times on loopback: a naive kill loses nothing, because bytes already in the
// replication socket survive SIGKILL; pausing the replicas first, then dropping
// their links, leaves the lock on the primary alone.
func runCutReplication(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	if err := cutReplicas(ctx, c, p, replicas); err != nil {
		return err
	}
	Logf(env, "cut-replication", p.Name, cluster.RolePrimary, "paused %d replicas and dropped their links; %s acknowledges writes nobody copies", len(replicas), p.Name)
	// With long jobs a new grant comes only when a holder finishes; wait for
	// one, or the kill would lose nothing. Under a setting that asks for a
	// replica none can come: the wait ends at the guard's first refusal
	// (AwaitGrantAlone), and the primary is killed all the same.
	got, closed, err := AwaitGrantAlone(ctx, env, p.Name, nowTrue(), 2*env.TTL()+2*time.Second, ClosedAlone)
	if err != nil {
		return err
	}
	// Let the lucky holder settle into its job before the primary dies.
	if err := Sleep(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	Logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d); an acquire landed after the cut: %v%s", p.Name, p.PID, got, closedNote(closed))
	killed := time.Now()
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	dead := time.Since(killed)
	_ = Sleep(ctx, 50*time.Millisecond)
	if err := resumeAll(c, replicas); err != nil {
		return err
	}
	// Sentinel elects a leader ~1.1 s (down-after and a vote) after the
	// kill, and a replica still paused then is no candidate: the failover
	// aborts (-failover-abort-no-good-slave) and is tried again only after
	// twice failover-timeout, by when the grant's lease has run out. The log
	// says how close it came.
	Logf(env, "heal-replication", p.Name, cluster.RoleReplica, "resumed %d replicas %v after the SIGKILL (the kill took %v)", len(replicas), time.Since(killed).Round(time.Millisecond), dead.Round(time.Millisecond))
	return failoverAndRejoin(ctx, env, p)
}

// PromoteReplica is the Sentinel race done by hand, over a runtime whose
// clients reach the primary at a service address it can move (Repointer;
// the standalone deployment declares the fault, promote-replica). The replicas are
// paused and their links dropped (as cut-replication does), so a grant made
// now lives on the primary alone; once one is made, the operator promotes a
// replica that never saw it. REPLICAOF NO ONE is queued on the stopped
// replica and runs in its first event-loop turn after SIGCONT: resumed
// first, it would reconnect at once and copy the grant before the command
// landed (what cluster.Queued says of TAKEOVER). Then the service address
// moves to it, dropping every client's connection, and the old primary and
// the other replicas are made its replicas.
func PromoteReplica(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	rp, ok := c.(cluster.Repointer)
	if !ok {
		return fmt.Errorf("promote-replica needs a service address to move (--topology standalone)")
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	if len(replicas) == 0 {
		return fmt.Errorf("promote-replica: %s has no live replica to promote", p.Name)
	}
	r := replicas[0]
	q, err := cluster.DialQueued(ctx, r.Addr)
	if err != nil {
		return err
	}
	defer q.Close()
	if err := cutReplicas(ctx, c, p, replicas); err != nil {
		return err
	}
	Logf(env, "promote-replica", p.Name, cluster.RolePrimary, "paused %d replicas and dropped their links; %s acknowledges writes nobody copies", len(replicas), p.Name)
	got, _, err := AwaitGrantAlone(ctx, env, p.Name, nowTrue(), 2*env.TTL()+2*time.Second, ClosedAlone)
	if err != nil {
		return err
	}
	if err := Sleep(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	if err := q.Send("REPLICAOF", "NO", "ONE"); err != nil {
		return err
	}
	if err := c.Resume(r.Name); err != nil {
		return err
	}
	if _, err := q.Reply(ctx); err != nil {
		return fmt.Errorf("REPLICAOF NO ONE on %s: %w", r.Name, err)
	}
	if err := rp.Repoint(r.Name); err != nil {
		return err
	}
	Logf(env, "promoted", r.Name, cluster.RolePrimary, "REPLICAOF NO ONE on %s, the service address moved to it (an acquire landed on %s after the cut: %v)", r.Name, p.Name, got)
	// No Sentinel watches a standalone primary: the promotion is the
	// failover, and the sweep counts it as its opportunity.
	Logf(env, history.NFailover, r.Name, cluster.RolePrimary, "the operator promoted %s; %s was primary", r.Name, p.Name)
	host, port, _ := strings.Cut(r.Reach(), ":")
	for _, n := range append([]cluster.Node{p}, replicas[1:]...) {
		if n.Name != p.Name {
			if err := c.Resume(n.Name); err != nil {
				return err
			}
		}
		if _, err := c.Command(ctx, n.Name, "REPLICAOF", host, port); err != nil {
			return fmt.Errorf("demote %s: %w", n.Name, err)
		}
	}
	Logf(env, "demote", p.Name, cluster.RoleReplica, "%s and the other replicas now replicate %s; the grant %s held alone is gone", p.Name, r.Name, p.Name)
	return nil
}

var faultFastRestart = &Fault{
	Name: "fast-restart",
	// ~1.5 s when Sentinel does not notice; but a restart loses the PING
	// in flight on Sentinel's link, and with down-after 1 s a quorum
	// sometimes marks the primary down and fails over anyway; the cluster
	// is ready again only once Sentinel demotes the restarted old primary
	// (~10 s): about one fault in three here.
	Cycle: 5 * time.Second,
	Marks: []Mark{{Event: "fast-restart", Heal: "restarted", Cause: CauseFastRestart}},
	Doc: "SIGKILL the primary and restart it at once with its old config, faster than down-after: no failover, " +
		"and without AOF the replicas resync from an empty primary, so every lock vanishes",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	Span:     func(_ Step, p PlanParams) time.Duration { return 4 * time.Second },
	Inject:   runFastRestart,
}

func runFastRestart(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	// Strike a lease just granted: its holder has its whole job ahead and
	// its first renewal TTL/3 away. The lock comes back only once a replica
	// has resynced from the empty primary (WAIT needs one), 0.75 or 1.7 s
	// after the kill on this machine; a holder caught at a random moment
	// often renewed first, was told "not held" and stopped (CI: lab 3
	// checked valid), and one caught just after a renewal was often at the
	// end of its job (6 s: 60 steps of 100 ms).
	why, err := awaitFreshGrant(ctx, env, 2*env.TTL()+2*time.Second)
	if err != nil {
		return err
	}
	Logf(env, "fast-restart", p.Name, cluster.RolePrimary, "SIGKILL %s and restart it at once with its old config; %s", p.Name, why)
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	if err := c.Restart(ctx, p.Name, cluster.WithOldConfig); err != nil {
		return err
	}
	Logf(env, "restarted", p.Name, cluster.RolePrimary, "%s is back, faster than any failover; replicas resync from it", p.Name)
	// Polled, not slept: the fault is over once the replicas have resynced
	// from the empty primary (the runner then waits for Sentinel's view).
	_, err = awaitOnline(ctx, c, p.Name, len(replicasOf(c, p.Name)), 5*time.Second)
	return err
}

// The refusals that close an opportunity: those the fault's own condition
// makes the guard repeat for every grant until the fault heals, so that the
// grant the fault waits for cannot come. With the replicas paused and their
// links dropped the primary has no replica to count (NOREPLICAS) and none to
// acknowledge (WAIT, WAITAOF). Inside a resync window no replica acknowledges
// (none has loaded the RDB, so none sends a REPLCONF ACK), but
// min-replicas-to-write counts them online, judged by the age of their last
// ACK, which a window may or may not outlast: its NOREPLICAS in one window says
// nothing of the next, where the old reference row saw it grant (51-62%
// double-granted). The faults that wait for a fresh grant with the replicas
// linked (fast-restart, partition) end at no refusal: there a WAIT shortfall
// is a slow acknowledgement, and the next grant may well pass.
var (
	ClosedAlone  = []string{GuardNoReplicas, GuardWait, GuardWaitAOF}
	closedWindow = []string{GuardWait, GuardWaitAOF}
)

// AwaitGrantAlone waits up to timeout for an acquire granted after `after` on
// a primary whose replicas the fault cut off, and ends early at the first
// acquire the replication guard refused for one of the closing reasons,
// which it logs as the opportunity closed by the setting (logClosed). An
// error only when ctx ends.
func AwaitGrantAlone(ctx context.Context, env Env, primary string, after int64, timeout time.Duration, closing []string) (granted, closed bool, err error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	granted, r := env.AwaitGrant(actx, after, closing)
	cancel()
	if ctx.Err() != nil {
		return false, false, ctx.Err()
	}
	if r != nil {
		logClosed(env, primary, after, *r)
	}
	return granted, r != nil, nil
}

// logClosed records that the setting refused the grant a fault waited for
// (history.NClosedBySetting): the checker and the sweep count these among
// the fault's opportunities, as ones the setting closed.
func logClosed(env Env, primary string, after int64, r Refusal) {
	env.Log(history.Event{F: history.NClosedBySetting, Node: primary, Role: string(cluster.RolePrimary), Key: r.Key, Client: r.Client,
		Detail: fmt.Sprintf("client %d's acquire of %s, invoked %v into the wait, was refused by the replication setting (%s): no grant can land while the fault holds, so the fault goes on without one; the opportunity is closed by the setting",
			r.Client, r.Key, time.Duration(r.Invoked-after).Round(time.Millisecond), r.Error)})
}

// closedNote is the kill event's words for an opportunity the setting closed.
func closedNote(closed bool) string {
	if closed {
		return " (the setting refused it: closed by the setting)"
	}
	return ""
}

// awaitFreshGrant waits up to timeout for a grant made from now on, and says
// which (or that none came) for the fault's log line; an error only when ctx
// ends. The faults that strike a lease just granted use it: its holder has
// its whole job ahead.
func awaitFreshGrant(ctx context.Context, env Env, timeout time.Duration) (string, error) {
	after := nowTrue()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	fresh := env.AwaitAcquire(wctx, after)
	cancel()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if h, ok := NewestHolder(env, after); fresh && ok {
		return fmt.Sprintf("client %d was just granted %s", h.Client, h.Key), nil
	}
	return fmt.Sprintf("no lock was granted in %v", timeout.Round(time.Millisecond)), nil
}

// awaitOnline polls the primary's INFO until it lists n replicas online, or
// the timeout passes (false, no error); an error only when ctx ends.
func awaitOnline(ctx context.Context, c cluster.Runtime, primary string, n int, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		inf, err := c.Command(ctx, primary, "INFO", "replication")
		if err == nil && strings.Count(inf, "state=online") >= n {
			return true, nil
		}
		if err := Sleep(ctx, 10*time.Millisecond); err != nil {
			return false, err
		}
	}
	return false, nil
}

// cutReplicas pauses the replicas, then drops their links on the primary:
// bytes already in a replication socket survive SIGKILL and SIGSTOP alike,
// so only both leave a write made now on the primary alone.
func cutReplicas(ctx context.Context, c cluster.Runtime, p cluster.Node, replicas []cluster.Node) error {
	if err := pauseAll(c, replicas); err != nil {
		return err
	}
	_, err := c.Command(ctx, p.Name, "CLIENT", "KILL", "TYPE", "replica")
	return err
}

func replicasOf(c cluster.Runtime, primary string) []cluster.Node {
	var out []cluster.Node
	for _, n := range c.Nodes() {
		if !n.Watches() && n.Name != primary && n.PID != 0 {
			out = append(out, n)
		}
	}
	return out
}

// NewestHolder is the holder granted most recently after true time after.
func NewestHolder(env Env, after int64) (Holder, bool) {
	var best Holder
	for _, h := range env.Holders() {
		if h.Since > after && h.Since > best.Since {
			best = h
		}
	}
	return best, best.Since != 0
}
