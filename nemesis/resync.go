package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

var faultResyncWindow = &Fault{
	Name: "resync-window",
	// Full resyncs of ~1.3 s until a grant lands 250-900 ms into a window
	// (one in ten to twenty), then as cut-replication.
	Cycle:    22 * time.Second,
	Failover: true, Needs: Needs{Replicas: 1},
	Marks: []Mark{{Event: "resync-window", Heal: "resync-done", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "make every replica full-sync, again until a lock is taken in the ~1s after the primary lists them " +
		"online but before it streams to them; then SIGKILL the primary: the promoted replica never saw the lock",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	// Resyncs until an acquire lands in a window: ~10 resyncs of ~1.3 s.
	Span:   func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 18*time.Second },
	Inject: runResyncWindow,
}

// runResyncWindow: after a full resync the primary lists a replica online as
// soon as the RDB is sent, but holds the command stream back until the
// replica's first REPLCONF ACK, which it sends only once it has loaded the RDB
// (on Valkey 9 up to ~1 s later: the download finishes in a background thread
// and the replica's once-a-second cron loads it). A lock granted while every
// replica is in that state reaches none of them; SIGKILL the primary and the
// promoted replica never saw it. Sentinel promotes the replica with the
// highest offset, so all replicas must be in the window at once: they are
// made to full-sync together (forceFullSync), and the window is read on both sides: the primary lists
// every replica online while each still reports master_sync_in_progress:1. A grant
// comes only when a holder finishes its job, so one resync rarely has one in
// its window: like cut-replication waiting for a fresh grant on the primary
// alone, the fault resyncs again until an acquire returns ok while every
// replica is still in the window, checked again right before the kill (at
// most resyncTries times, or resyncGiveUp; then it kills anyway and its kill
// event says no acquire landed).
func runResyncWindow(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	Logf(env, "resync-window", p.Name, cluster.RolePrimary, "making %d replicas full-sync from %s, until an acquire lands inside the window", len(replicas), p.Name)
	giveUp := time.Now().Add(resyncGiveUp)
	got, closed, tries := false, false, 0
	// moved reports (and logs) a failover Sentinel ran on its own while the
	// resyncs went on: each forks the primary, and on a loaded machine (3
	// trials on 2 cores) Sentinel has judged a primary down a second after
	// promoting it and promoted a resyncing replica, while this fault went
	// on resyncing from, and would have killed, a primary that was no
	// longer the one. Logged by nobody, that failover's split brain was
	// blamed on this fault's window (WAIT 1 10 × resync-window, trial 4 of
	// the row in results/rows/resync-window). The fault ends there without
	// its kill, leaving the old primary to Sentinel to demote.
	moved := func(why error) bool {
		np, perr := c.Primary(ctx)
		if perr != nil || np.Name == p.Name {
			return false
		}
		detail := fmt.Sprintf("Sentinel promoted %s during the resyncs, before any kill (%s, primary until then, was not killed): a failover this fault did not drive", np.Name, p.Name)
		if why != nil {
			detail += fmt.Sprintf(" (%v)", why)
		}
		Logf(env, history.NFailover, np.Name, cluster.RolePrimary, "%s", detail)
		return true
	}
	for !got && !closed && tries < resyncTries && (tries == 0 || time.Now().Before(giveUp)) {
		if tries > 0 && moved(nil) {
			return nil
		}
		tries++
		errs := make(chan error, len(replicas))
		for _, r := range replicas {
			go func() { errs <- forceFullSync(ctx, c, r.Name, p.Reach()) }()
		}
		var ferr error
		for range replicas {
			if err := <-errs; err != nil && ferr == nil {
				ferr = err
			}
		}
		if ferr != nil {
			// Such a failover also made a resync step on a replica, by then
			// attached to the new primary, fail (READONLY): not an error
			// of the fault's, and no reason to end the trial.
			if moved(ferr) {
				return nil
			}
			return ferr
		}
		open, err := awaitWindow(ctx, c, p.Name, replicas)
		if err != nil {
			return err
		}
		if !open {
			continue
		}
		// Only a grant at least resyncSettle into the window counts: the
		// holder it replaces renews every TTL/3 and, with jobs that end just
		// after a renewal, renewed ~0.15 s before releasing. Had that
		// renewal made it into the RDB, the promoted replica would keep the
		// old holder's key until about when the new holder's lease ends, and
		// nobody could be granted the lock twice.
		//
		// Under WAIT or WAITAOF no grant can land in a window (no replica
		// acknowledges before it has loaded the RDB), so the first such
		// refusal of an acquire the window would have counted, with every
		// replica still in it, ends the resyncs: the setting refused the grant
		// this fault waits for, and the kill follows as after a grant.
		after := nowTrue() + int64(resyncSettle)
		actx, cancel := context.WithTimeout(ctx, resyncWindow)
		granted, refused := env.AwaitGrant(actx, after, closedWindow)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if (granted || refused != nil) && inWindow(ctx, c, p.Name, replicas) {
			got, closed = granted, refused != nil
			if closed {
				logClosed(env, p.Name, after, *refused)
			}
		}
	}
	if moved(nil) {
		return nil
	}
	Logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d) inside the resync window; an acquire landed in it: %v (resync %d)%s", p.Name, p.PID, got, tries, closedNote(closed))
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	Logf(env, "resync-done", p.Name, cluster.RolePrimary, "resync window over")
	return failoverAndRejoin(ctx, env, p)
}

// forceFullSync makes a running replica full-sync from the primary: detached
// (REPLICAOF NO ONE), one write of its own puts its offset past anything the
// primary can continue from, and re-attached its PSYNC is refused. A
// restarted replica would do too, but a fresh process on a tiny data set
// often syncs and loads within ~40 ms: no window to speak of. A running
// replica loads the received RDB only at its next once-a-second cron, so its
// window lasts up to ~1 s.
//
// Detached, the replica is a primary without replicas, and under the setting
// a cell measures, min-replicas-to-write, it refuses that write (NOREPLICAS:
// every resync-window trial of those cells ended with no verdict). So the
// setting is lifted on the replica for the write and put back as soon as it
// is attached again, before it could be promoted; it is put back even when a
// step fails.
func forceFullSync(ctx context.Context, c cluster.Runtime, replica, primaryAddr string) (err error) {
	host, port, _ := strings.Cut(primaryAddr, ":")
	minReplicas := "0"
	if v, err := c.Command(ctx, replica, "CONFIG", "GET", "min-replicas-to-write"); err != nil {
		return fmt.Errorf("force a full sync of %s: %w", replica, err)
	} else if _, n, ok := strings.Cut(v, "\n"); ok {
		minReplicas = strings.TrimSpace(n)
	}
	steps := [][]string{{"REPLICAOF", "NO", "ONE"}, {"SET", "lockjepsen:resync", "diverge"}, {"REPLICAOF", host, port}}
	if minReplicas != "0" {
		steps = slices.Insert(steps, 1, []string{"CONFIG", "SET", "min-replicas-to-write", "0"})
		defer func() {
			// Even when the trial is ending: the node must not keep a
			// setting the cell does not measure.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if _, rerr := c.Command(rctx, replica, "CONFIG", "SET", "min-replicas-to-write", minReplicas); rerr != nil && err == nil {
				err = fmt.Errorf("force a full sync of %s: put min-replicas-to-write %s back: %w", replica, minReplicas, rerr)
			}
		}()
	}
	for _, cmd := range steps {
		if _, err := c.Command(ctx, replica, cmd...); err != nil {
			return fmt.Errorf("force a full sync of %s: %w", replica, err)
		}
	}
	return nil
}

// awaitWindow polls until every replica is in the resync window (true), or
// one of them got out of it first, or 10 s passed (false: resync again).
func awaitWindow(ctx context.Context, c cluster.Runtime, primary string, replicas []cluster.Node) (bool, error) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		switch windowState(ctx, c, primary, replicas) {
		case windowOpen:
			return true, nil
		case windowMissed:
			return false, nil
		}
		if err := Sleep(ctx, 5*time.Millisecond); err != nil {
			return false, err
		}
	}
	return false, nil
}

const (
	windowNotYet = iota // some replica still connecting or receiving
	windowOpen          // every replica has the RDB, none has loaded it
	windowMissed        // some replica already loaded it: streaming began
)

// windowState reads the window on both sides: the primary lists every
// replica online (the RDB sent), and every replica still reports
// master_sync_in_progress:1 (not loaded, so not acknowledged, so the primary
// has streamed it nothing since). The primary's acknowledged offset is no
// guide: it stays 0 until the replica's next once-a-second ACK, well after
// streaming began.
func windowState(ctx context.Context, c cluster.Runtime, primary string, replicas []cluster.Node) int {
	inf, err := c.Command(ctx, primary, "INFO", "replication")
	if err != nil {
		return windowNotYet
	}
	online := strings.Count(inf, "state=online") >= len(replicas)
	for _, r := range replicas {
		// A restarted node's cached admin connection fails once, then
		// reconnects.
		ri, err := c.Command(ctx, r.Name, "INFO", "replication")
		if err != nil {
			ri, err = c.Command(ctx, r.Name, "INFO", "replication")
		}
		switch {
		case err != nil:
			return windowNotYet
		case strings.Contains(ri, "master_link_status:up"):
			return windowMissed
		case !strings.Contains(ri, "master_sync_in_progress:1"):
			return windowNotYet
		}
	}
	if !online {
		return windowNotYet
	}
	return windowOpen
}

// inWindow: every replica still in the window, right before the kill.
func inWindow(ctx context.Context, c cluster.Runtime, primary string, replicas []cluster.Node) bool {
	return windowState(ctx, c, primary, replicas) == windowOpen
}

// An acquire must return between resyncSettle and resyncWindow after the
// window opened (the window lasts ~0.6-1 s here); the window is checked again
// after it, right before the kill. A grant lands in that part of a window
// about one resync in ten: the fault gives up after resyncTries resyncs or
// resyncGiveUp.
const (
	resyncSettle = 250 * time.Millisecond
	resyncWindow = 900 * time.Millisecond
	resyncTries  = 40
	resyncGiveUp = 45 * time.Second
)
