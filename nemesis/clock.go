package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/truetime"
)

var nowTrue = truetime.Now

var faultClockBump = &Fault{
	Name: "clock-bump",

	As:    "clock-bump-leader",
	Needs: Needs{FakeTime: true},
	Marks: []Mark{{Event: "clock-bump", Heal: "clock-reset", Cause: CauseServerClock}},
	Doc:   "move the primary's wall clock forward by more than the TTL (libfaketime): leases there expire early",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		secs := 2*p.TTL.Seconds() + float64(rng.IntN(5))
		return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(time.Second))), Offset: fmt.Sprintf("+%.0f", secs)}
	},
	Span:   HeldSpan,
	Inject: runClockBump,
}

func runClockBump(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	// Logged before the write, as every clock fault's start is: see
	// cluster.Local.setClock.
	Logf(env, "clock-bump", p.Name, cluster.RolePrimary, "wall clock of %s moved %ss", p.Name, s.Offset)
	if err := c.SetClockOffset(p.Name, s.Offset); err != nil {
		return err
	}
	sleepErr := Sleep(ctx, s.Duration)
	if err := c.SetClockOffset(p.Name, ""); err != nil {
		return err
	}
	Logf(env, "clock-reset", p.Name, cluster.RolePrimary, "wall clock of %s back to true time", p.Name)
	return sleepErr
}

var faultClockStrobe = &Fault{
	Name:  "clock-strobe",
	Needs: Needs{FakeTime: true},
	Marks: []Mark{{Event: "clock-strobe", Heal: "clock-reset", Cause: CauseServerClock}},
	Doc:   "flip the primary's wall clock between true time and a jump past the TTL every 200ms (libfaketime)",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		secs := 2*p.TTL.Seconds() + float64(rng.IntN(5))
		return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(time.Second))), Offset: fmt.Sprintf("+%.0f", secs)}
	},
	Span:   HeldSpan,
	Inject: runClockStrobe,
}

// runClockStrobe flips the primary's clock so that leases there expire early
// in bursts; offsets are written atomically (libfaketime exits the server on
// a half-written file).
func runClockStrobe(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	Logf(env, "clock-strobe", p.Name, cluster.RolePrimary, "wall clock of %s flips between +0 and %ss every 200ms for %v", p.Name, s.Offset, s.Duration.Round(time.Millisecond))
	end := time.Now().Add(s.Duration)
	on := false
	var loopErr error
	for time.Now().Before(end) && loopErr == nil {
		on = !on
		off := ""
		if on {
			off = s.Offset
		}
		if err := c.SetClockOffset(p.Name, off); err != nil {
			return err
		}
		loopErr = Sleep(ctx, 200*time.Millisecond)
	}
	if err := c.SetClockOffset(p.Name, ""); err != nil {
		return err
	}
	Logf(env, "clock-reset", p.Name, cluster.RolePrimary, "wall clock of %s back to true time", p.Name)
	return loopErr
}

var faultReplicaClockAhead = &Fault{
	Name:     "replica-clock-ahead",
	Failover: true, Needs: Needs{Replicas: 1, FakeTime: true},
	Marks: []Mark{{Event: "replica-clock", Heal: "replica-clock-reset", Cause: CauseReplicaClock}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "move one replica's wall clock ahead by twice the TTL, make it the only one Sentinel may promote, wait for a " +
		"fresh grant and SIGKILL the primary: locks reach replicas as absolute PXAT times, so on the promoted clock they are already over",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Offset: fmt.Sprintf("+%.0f", 2*p.TTL.Seconds()+float64(rng.IntN(3)))}
	},
	Span:   func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 18*time.Second },
	Inject: runReplicaClock,
}

var faultReplicaClockBehind = &Fault{
	Name:     "replica-clock-behind",
	Failover: true, Needs: Needs{Replicas: 1, FakeTime: true},
	Marks: []Mark{{Event: "replica-clock", Heal: "replica-clock-reset", Cause: CauseReplicaClock}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "the same with the replica's clock behind by half the TTL: after the failover locks outlive their TTL " +
		"there (no double grant, but a lock nobody renews blocks others for longer)",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		// Half the TTL: the heal puts the clock right, a forward jump of
		// that much, which a holder renewing every TTL/3 survives; a
		// larger step would end leases early (the clock-jump lesson).
		return Step{Offset: fmt.Sprintf("-%.1f", p.TTL.Seconds()/2)}
	},
	Span:   func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 18*time.Second },
	Inject: runReplicaClock,
}

// runReplicaClock: Valkey sends SET ... PX to replicas as SET ... PXAT, an
// absolute time on the primary's clock, and a promoted replica then judges
// it by its own clock. One replica gets a skewed clock and is made the only
// candidate (replica-priority 0 on the others, waited for until every
// Sentinel has read it: Sentinels refresh a replica's INFO every 10 s), a
// fresh grant is awaited, and the primary is killed.
func runReplicaClock(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	if len(replicas) == 0 {
		return fmt.Errorf("no replica to promote")
	}
	target := replicas[0]
	setPriorities := func(target string) error {
		for _, r := range replicas {
			prio := "100"
			if target != "" && r.Name != target {
				prio = "0"
			}
			if _, err := c.Command(ctx, r.Name, "CONFIG", "SET", "replica-priority", prio); err != nil {
				return err
			}
		}
		return nil
	}
	if err := setPriorities(target.Name); err != nil {
		return err
	}
	defer func() { _ = setPriorities("") }()
	if err := awaitPriorities(ctx, c, target.Name); err != nil {
		return err
	}
	// Logged before the write: see cluster.Local.setClock.
	Logf(env, "replica-clock", target.Name, cluster.RoleReplica, "wall clock of replica %s moved %ss; it is the only replica Sentinel may promote", target.Name, s.Offset)
	if err := c.SetClockOffset(target.Name, s.Offset); err != nil {
		return err
	}
	since := nowTrue()
	actx, cancel := context.WithTimeout(ctx, 2*env.TTL()+2*time.Second)
	got := env.AwaitAcquire(actx, since)
	cancel()
	// Let the grant reach the replica before the primary dies: here the lock
	// is not lost, it is judged by another clock.
	if err := Sleep(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	Logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d); a fresh grant before it: %v", p.Name, p.PID, got)
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	ferr := failoverAndRejoin(ctx, env, p)
	// Hold the skew a while after the promotion, then undo it: the lesson
	// is the grants the promoted clock judged.
	_ = Sleep(ctx, 3*time.Second)
	if err := c.SetClockOffset(target.Name, ""); err != nil {
		return err
	}
	Logf(env, "replica-clock-reset", target.Name, cluster.RolePrimary, "wall clock of %s back to true time", target.Name)
	return ferr
}

// awaitPriorities waits until every watcher (Sentinel) lists the other
// replicas with priority 0, so that the coming failover can only pick
// target. A deployment without watchers has none to wait for: the replicas'
// own priorities are all there is.
func awaitPriorities(ctx context.Context, c cluster.Runtime, target string) error {
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	want := 0
	for _, n := range c.Nodes() {
		if !n.Watches() && n.Name != target && n.PID != 0 {
			want++
		}
	}
	want-- // the primary is not a replica
	for {
		ok := true
		for _, n := range c.Nodes() {
			w, watches := n.Watcher()
			if !watches {
				continue
			}
			if w.Unpromotable == nil {
				return fmt.Errorf("%s watches the replicas but cannot say which it will promote: no failover this fault can steer", n.Name)
			}
			if got, err := w.Unpromotable(wctx, c, n); err != nil || got < want {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if err := Sleep(wctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("Sentinels did not learn the replica priorities: %w", err)
		}
	}
}
