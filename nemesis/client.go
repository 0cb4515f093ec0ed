package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

var faultCrashClient = &Fault{
	Name:   "crash-client",
	Needs:  Needs{Topology: TopologyAny},
	Marks:  []Mark{{Event: "crash-client", Heal: "client-gone", Cause: CauseClientCrash}},
	Doc:    "a client SIGKILLs itself at its next acquire's step point: between SETNX and EXPIRE for setnx-expire, right after SET NX PX for the others",
	plan:   planNode,
	span:   func(_ Step, p PlanParams) time.Duration { return 2 * time.Second },
	inject: runCrashClient,
}

// runCrashClient arms one client to SIGKILL itself at its next acquire's step
// point: between SETNX and EXPIRE for setnx-expire, right after SET NX PX for
// the others. It returns when the client is gone (or after a while).
func runCrashClient(ctx context.Context, env Env, s Step) error {
	ce, err := clientEnv(env)
	if err != nil {
		return err
	}
	i := s.Node % max(1, ce.NumClients())
	for k := 0; k < ce.NumClients() && !ce.ClientAlive(i); k++ {
		i = (i + 1) % ce.NumClients()
	}
	if err := ce.ArmCrash(i); err != nil {
		return err
	}
	logf(env, "crash-client", ClientNode(i), "client", "client %d will SIGKILL itself at its next acquire's step point (after SETNX, before EXPIRE for setnx-expire)", i)
	deadline := time.Now().Add(5 * time.Second)
	for ce.ClientAlive(i) && time.Now().Before(deadline) {
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	logf(env, "client-gone", ClientNode(i), "client", "client %d gone: %v", i, !ce.ClientAlive(i))
	return nil
}

var faultKillHolder = &Fault{
	Name:   "kill-holder",
	Needs:  Needs{Topology: TopologyAny},
	Marks:  []Mark{{Event: "kill-client", Heal: "client-gone", Cause: CauseClientCrash}},
	Doc:    "SIGKILL a holder after it renewed its lock once, for good: a recipe whose renewal dropped the TTL leaves the lock stuck",
	plan:   planNode,
	span:   func(_ Step, p PlanParams) time.Duration { return p.TTL + 2*time.Second },
	inject: runKillHolder,
}

// runKillHolder SIGKILLs a client that has held its lock long enough to have
// renewed it once (TTL/3): with extend-no-px that renewal dropped the TTL.
func runKillHolder(ctx context.Context, env Env, s Step) error {
	ce, err := clientEnv(env)
	if err != nil {
		return err
	}
	// The lesson needs a holder that has renewed (an extend without PX has
	// then dropped its TTL) and not yet released: kill the first one seen
	// renewed, at once, rather than guess from the clock.
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	h, err := pickRenewedHolder(hctx, env)
	cancel()
	if err != nil {
		return err
	}
	logf(env, "kill-client", ClientNode(h.Client), "client", "SIGKILL client %d, holder of %s since a renewal", h.Client, h.Key)
	if err := ce.KillClient(h.Client); err != nil {
		return err
	}
	logf(env, "client-gone", ClientNode(h.Client), "client", "client %d is gone for good", h.Client)
	return nil
}

func pickHolder(ctx context.Context, env Env) (Holder, error) {
	for {
		if hs := env.Holders(); len(hs) > 0 {
			return hs[0], nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return Holder{}, fmt.Errorf("no client held a lock: %w", err)
		}
	}
}

// ClientNode is the node name of client slot c in nemesis events (client-N),
// what the checker reads a client fault's target from.
func ClientNode(c int) string { return fmt.Sprintf("client-%d", c) }

var faultPauseClient = &Fault{
	Name:  "pause-client",
	Kind:  "paused-client",
	Needs: Needs{Topology: TopologyAny},
	Marks: []Mark{{Event: "pause-client", Heal: "resume-client", Cause: CauseClientPause}},
	Doc: "SIGSTOP a client that holds a lock for longer than the TTL, then SIGCONT: it wakes up believing it " +
		"still holds the lock, and writes",
	plan: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: p.TTL + p.TTL/2 + time.Duration(rng.Int64N(int64(p.TTL/2)+1))}
	},
	span:   heldSpan,
	inject: runPauseClient,
}

func runPauseClient(ctx context.Context, env Env, s Step) error {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	h, err := pickHolder(hctx, env)
	cancel()
	if err != nil {
		return err
	}
	logf(env, "pause-client", ClientNode(h.Client), "client", "SIGSTOP client %d, holder of %s, for %v (TTL %v)", h.Client, h.Key, s.Duration.Round(time.Millisecond), env.TTL())
	if err := env.PauseClient(h.Client); err != nil {
		return err
	}
	sleepErr := sleep(ctx, s.Duration)
	if err := env.ResumeClient(h.Client); err != nil {
		return err
	}
	logf(env, "resume-client", ClientNode(h.Client), "client", "SIGCONT client %d", h.Client)
	return sleepErr
}

var faultSkewClient = &Fault{
	Name:  "skew-client",
	Needs: Needs{Topology: TopologyAny},
	Marks: []Mark{{Event: "skew-client", Heal: "unskew-client", Cause: CauseClientClock}},
	Doc:   "slow a holder's own clock (rate < 1): it believes its lease lasts longer than it does",
	plan: func(rng *rand.Rand, p PlanParams) Step {
		// At rate r the client renews every TTL/(3r) of true time: below
		// 1/3 its lease runs out on the server before it renews.
		return Step{Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1)), Rate: 0.1 + float64(rng.IntN(3))*0.05}
	},
	span:   heldSpan,
	inject: runSkewClient,
}

func runSkewClient(ctx context.Context, env Env, s Step) error {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	h, err := pickHolder(hctx, env)
	cancel()
	if err != nil {
		return err
	}
	if err := env.SkewClient(h.Client, 0, s.Rate); err != nil {
		return err
	}
	logf(env, "skew-client", ClientNode(h.Client), "client", "client %d's clock now runs at %.2fx", h.Client, s.Rate)
	sleepErr := sleep(ctx, s.Duration)
	if err := env.SkewClient(h.Client, 0, 1); err != nil {
		return err
	}
	logf(env, "unskew-client", ClientNode(h.Client), "client", "client %d's clock back to true rate", h.Client)
	return sleepErr
}
