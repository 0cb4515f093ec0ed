package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// The mechanisms over a consensus service's leader (a Raft or Zab leader),
// as Runtime.Primary names it: kill it, pause it, cut it off from the other
// members, or from everyone. Each consensus deployment's folder declares its
// fault entries over them with its own timing; product names the service in
// the history's words.

// KillLeader SIGKILLs the leader, waits for the remaining members to elect
// another (logged as a failover), and restarts the old leader from its data
// dir: it rejoins as a follower.
func KillLeader(product string) func(context.Context, Env, Step) error {
	return func(ctx context.Context, env Env, _ Step) error {
		c := env.Cluster()
		l, err := c.Primary(ctx)
		if err != nil {
			return err
		}
		Logf(env, "kill", l.Name, "leader", "SIGKILL %s leader %s (pid %d)", product, l.Name, l.PID)
		if err := c.Kill(l.Name); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		nl, err := c.WaitFailover(wctx, l.Name)
		if err != nil {
			return err
		}
		Logf(env, history.NFailover, nl.Name, "leader", "%s elected %s; %s was leader", product, nl.Name, l.Name)
		if err := c.Restart(ctx, l.Name, cluster.AsReplica); err != nil {
			return err
		}
		Logf(env, "restart", l.Name, "follower", "%s restarted from its data dir, rejoined as a follower", l.Name)
		return nil
	}
}

// PauseLeader SIGSTOPs the leader past the election timeout: the others
// elect a new leader (logged as a failover); SIGCONT and the old leader, on
// an older term (epoch), steps down at the first message it hears.
func PauseLeader(product string, election time.Duration) func(context.Context, Env, Step) error {
	return func(ctx context.Context, env Env, s Step) error {
		c := env.Cluster()
		l, err := c.Primary(ctx)
		if err != nil {
			return err
		}
		Logf(env, "pause-node", l.Name, "leader", "SIGSTOP %s leader %s for %v (election timeout %v)", product, l.Name, s.Duration.Round(time.Millisecond), election)
		if err := c.Pause(l.Name); err != nil {
			return err
		}
		return leaderOut(ctx, env, s, product, l.Name, func() error { return c.Resume(l.Name) }, "resume-node", "SIGCONT "+l.Name, "paused")
	}
}

// PartitionLeader cuts the leader off from the other members
// (cluster.Partitioner: the docker runtime disconnects it from their home
// networks and them from its own) while the clients on the host still reach
// it. The majority elects a new leader (logged as a failover); the old one
// cannot commit anything without them, and steps down. The heal runs even
// when the run is interrupted.
func PartitionLeader(product string, election time.Duration) func(context.Context, Env, Step) error {
	return func(ctx context.Context, env Env, s Step) error {
		c := env.Cluster()
		pc, err := partitioner(c, "member")
		if err != nil {
			return err
		}
		l, err := c.Primary(ctx)
		if err != nil {
			return err
		}
		Logf(env, "partition", l.Name, "leader", "cut %s leader %s off from the other members for %v (election timeout %v); the clients still reach it",
			product, l.Name, s.Duration.Round(time.Millisecond), election)
		if err := partitionNode(pc, l.Name); err != nil {
			return err
		}
		return leaderOut(ctx, env, s, product, l.Name, func() error { return pc.Heal(l.Name) }, "heal-partition",
			l.Name+" reconnected to the other members", "cut off")
	}
}

// IsolateLeader cuts the leader off from everything (cluster.Isolator: the
// docker runtime disconnects it from every network, its own home network,
// where the clients reach it, included): the followers give it up and elect
// another (logged as a failover); the old leader, without a quorum, stops
// serving, and its clients' connections go silent. The heal runs even when
// the run is interrupted.
func IsolateLeader(product string, election time.Duration) func(context.Context, Env, Step) error {
	return func(ctx context.Context, env Env, s Step) error {
		c := env.Cluster()
		iso, ok := c.(cluster.Isolator)
		if !ok {
			return fmt.Errorf("this runtime cannot cut a %s member off: run with --runtime docker", product)
		}
		l, err := c.Primary(ctx)
		if err != nil {
			return err
		}
		Logf(env, "isolate-leader", l.Name, "leader", "cut %s leader %s off from the other members and from the clients for %v (a silent leader is given up after %v)",
			product, l.Name, s.Duration.Round(time.Millisecond), election)
		if err := iso.Isolate(l.Name); err != nil {
			return errors.Join(err, iso.Heal(l.Name))
		}
		return leaderOut(ctx, env, s, product, l.Name, func() error { return iso.Heal(l.Name) }, "heal-isolate-leader",
			l.Name+" reconnected to the other members and the clients", "cut off")
	}
}

// leaderOut keeps the leader out for the step's duration, then ends
// that with undo (which runs even when the run is interrupted, so the fault
// always heals), logging the heal event and, when the majority elected a new
// leader meanwhile, that failover.
func leaderOut(ctx context.Context, env Env, s Step, product, leader string, undo func() error, healEvent, healText, while string) error {
	sleepErr := Sleep(ctx, s.Duration)
	var elected string
	if sleepErr == nil {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if nl, err := env.Cluster().WaitFailover(wctx, leader); err == nil {
			elected = nl.Name
		}
		cancel()
	}
	if err := undo(); err != nil {
		return err
	}
	Logf(env, healEvent, leader, "leader", "%s", healText)
	if elected != "" {
		Logf(env, history.NFailover, elected, "leader", "%s elected %s while %s was %s", product, elected, leader, while)
	}
	return sleepErr
}
