package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

var faultPausePrimary = &Fault{
	Name: "pause-primary",

	As: "pause-leader",
	// Paused 4-5 s, then ~10 s until Sentinel demotes the resumed primary.
	Cycle:    15 * time.Second,
	Failover: true, Needs: Needs{Replicas: 1},
	Marks: []Mark{{Event: "pause-node", Heal: "resume-node", Cause: CauseSplitBrain}},
	Doc: "SIGSTOP the primary past down-after (split brain): Sentinel promotes a replica; SIGCONT and the old " +
		"primary serves clients still connected to it until Sentinel demotes it",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: 2*p.DownAfter + 2*time.Second + time.Duration(rng.Int64N(int64(time.Second)))}
	},
	Span:   func(s Step, p PlanParams) time.Duration { return s.Duration + 4*time.Second },
	Inject: runPausePrimary,
}

func runPausePrimary(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	sleepErr := holdPaused(ctx, env, p, "pause-node", "resume-node", s.Duration)
	if sleepErr != nil {
		return sleepErr
	}
	if np, err := c.Primary(ctx); err == nil && np.Name != p.Name {
		Logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s while %s was paused", np.Name, p.Name)
	}
	return nil
}

func pauseAll(c cluster.Runtime, nodes []cluster.Node) error {
	for _, n := range nodes {
		if err := c.Pause(n.Name); err != nil {
			return err
		}
	}
	return nil
}

// resumeAll resumes the nodes side by side: on the docker runtime each
// unpause is a daemon call, 0.3-1 s apiece under CI's load, and the failover
// race needs every replica answering Sentinel again before the primary's
// down-after runs out (runCutReplication).
func resumeAll(c cluster.Runtime, nodes []cluster.Node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Resume(n.Name)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

var faultPauseReplicas = &Fault{
	Name:  "pause-replicas",
	Cycle: 3500 * time.Millisecond,
	Needs: Needs{Replicas: 1},
	Marks: []Mark{{Event: "pause-replicas", Heal: "resume-replicas", Cause: CauseReplication, Moment: marks.MomentGrant}},
	Doc: "SIGSTOP every replica for a while, then SIGCONT: no failover, but min-replicas-to-write and WAIT " +
		"refuse writes meanwhile (the cost side of those knobs)",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))}
	},
	Span:   HeldSpan,
	Inject: runPauseReplicas,
}

func runPauseReplicas(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	for _, r := range replicas {
		if err := c.Pause(r.Name); err != nil {
			return err
		}
	}
	Logf(env, "pause-replicas", p.Name, cluster.RolePrimary, "SIGSTOP %d replicas of %s for %v", len(replicas), p.Name, s.Duration.Round(time.Millisecond))
	sleepErr := Sleep(ctx, s.Duration)
	for _, r := range replicas {
		if err := c.Resume(r.Name); err != nil {
			return err
		}
	}
	Logf(env, "resume-replicas", p.Name, cluster.RolePrimary, "SIGCONT %d replicas", len(replicas))
	return sleepErr
}

// holdPaused SIGSTOPs a node for d and SIGCONTs it, logging the fault and its
// heal under the given event names (the marks its fault declares). The
// resume runs even when ctx ends, so no node is left stopped; the error is
// the pause's or the interruption's.
func holdPaused(ctx context.Context, env Env, n cluster.Node, pause, resume string, d time.Duration) error {
	c := env.Cluster()
	Logf(env, pause, n.Name, cluster.RolePrimary, "SIGSTOP %s for %v", n.Name, d.Round(time.Millisecond))
	if err := c.Pause(n.Name); err != nil {
		return err
	}
	sleepErr := Sleep(ctx, d)
	if err := c.Resume(n.Name); err != nil {
		return err
	}
	Logf(env, resume, n.Name, cluster.RolePrimary, "SIGCONT %s", n.Name)
	return sleepErr
}
