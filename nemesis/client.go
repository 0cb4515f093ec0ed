package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// ClientEnv is the part of the runner's Env the client faults need (and the
// redlock faults that cut a client off from some nodes): each reaches one
// client process through it. The runner implements it; a fault asks for it
// with ClientControls.
type ClientEnv interface {
	NumClients() int
	// SetUnreachable tells client i's recipe to send nothing to these node
	// addresses (nil heals): a partial partition on loopback.
	SetUnreachable(i int, addrs []string) error
	// ArmCrash makes client i SIGKILL itself at its next acquire's step point.
	ArmCrash(i int) error
	KillClient(i int) error
	// StarveRenewals stalls client i's watchdog for d (its renewals and
	// its lease-end check); its job goes on.
	StarveRenewals(i int, d time.Duration) error
	// ArmReply makes client i drop or cancel (mode "drop", "cancel") the
	// reply of its next op (history.FAcquire, history.FRelease).
	ArmReply(i int, op, mode string) error
	// DropConns makes client i close its lock connections from its side.
	DropConns(i int) error
	ClientAlive(i int) bool
	// DelayedRestart is --delayed-restart: how long a crashed node stays down.
	DelayedRestart() time.Duration
}

// ClientControls is env's ClientEnv, for the client faults here and a
// deployment's own in its folder.
func ClientControls(env Env) (ClientEnv, error) {
	ce, ok := env.(ClientEnv)
	if !ok {
		return nil, fmt.Errorf("this runner cannot steer clients")
	}
	return ce, nil
}

var faultCrashClient = &Fault{
	Name:     "crash-client",
	Needs:    Needs{Topology: TopologyAny},
	Marks:    []Mark{{Event: "crash-client", Heal: "client-gone", Cause: CauseClientCrash}},
	Doc:      "a client SIGKILLs itself at its next acquire's step point: between SETNX and EXPIRE for setnx-expire, right after SET NX PX for the others",
	PlanStep: PlanNode,
	Span:     func(_ Step, p PlanParams) time.Duration { return 2 * time.Second },
	Inject:   runCrashClient,
}

// runCrashClient arms one client to SIGKILL itself at its next acquire's step
// point: between SETNX and EXPIRE for setnx-expire, right after SET NX PX for
// the others. It returns when the client is gone (or after a while).
func runCrashClient(ctx context.Context, env Env, s Step) error {
	ce, err := ClientControls(env)
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
	Logf(env, "crash-client", ClientNode(i), "client", "client %d will SIGKILL itself at its next acquire's step point (after SETNX, before EXPIRE for setnx-expire)", i)
	deadline := time.Now().Add(5 * time.Second)
	for ce.ClientAlive(i) && time.Now().Before(deadline) {
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	Logf(env, "client-gone", ClientNode(i), "client", "client %d gone: %v", i, !ce.ClientAlive(i))
	return nil
}

var faultKillHolder = &Fault{
	Name:     "kill-holder",
	Needs:    Needs{Topology: TopologyAny},
	Marks:    []Mark{{Event: "kill-client", Heal: "client-gone", Cause: CauseClientCrash}},
	Doc:      "SIGKILL a holder after it renewed its lock once, for good: a recipe whose renewal dropped the TTL leaves the lock stuck",
	PlanStep: PlanNode,
	Span:     func(_ Step, p PlanParams) time.Duration { return p.TTL + 2*time.Second },
	Inject:   runKillHolder,
}

// runKillHolder SIGKILLs a client that has held its lock long enough to have
// renewed it once (TTL/3): with extend-no-px that renewal dropped the TTL.
func runKillHolder(ctx context.Context, env Env, s Step) error {
	ce, err := ClientControls(env)
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
	Logf(env, "kill-client", ClientNode(h.Client), "client", "SIGKILL client %d, holder of %s since a renewal", h.Client, h.Key)
	if err := ce.KillClient(h.Client); err != nil {
		return err
	}
	Logf(env, "client-gone", ClientNode(h.Client), "client", "client %d is gone for good", h.Client)
	return nil
}

func pickHolder(ctx context.Context, env Env) (Holder, error) {
	for {
		if hs := env.Holders(); len(hs) > 0 {
			return hs[0], nil
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return Holder{}, fmt.Errorf("no client held a lock: %w", err)
		}
	}
}

// FreshHolder waits up to 5 s for a grant made after now and returns its
// holder (the client faults here and a deployment's own use it): a client at the start of its hold, with the whole of it ahead. A
// client fault matters only to a holder that keeps working past its lease:
// skewed or stopped near the end of its job, a holder releases before the
// server's lease runs out and spoils nothing (lab7-client-clock once checked
// resource valid that way, under CI's load). Without a fresh grant in 5 s,
// any holder.
func FreshHolder(ctx context.Context, env Env) (Holder, error) {
	after := nowTrue()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	granted := env.AwaitAcquire(wctx, after)
	cancel()
	if granted {
		hs := env.Holders()
		for i := len(hs) - 1; i >= 0; i-- {
			if hs[i].Since > after {
				return hs[i], nil
			}
		}
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pickHolder(hctx, env)
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
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: p.TTL + p.TTL/2 + time.Duration(rng.Int64N(int64(p.TTL/2)+1))}
	},
	Span:   HeldSpan,
	Inject: runPauseClient,
}

// runPauseClient stops a holder early in its hold, in the think between its
// first read and its write. Picking any holder, redlock-paused-client once
// checked resource valid in CI: both pauses had landed after the last
// write, and the holder woke only to release. Stopped the moment its grant
// shows (FreshHolder), it was stopped with its first read in flight, which
// on waking ended at its deadline, info, and the job stopped there (seed 1
// of 10, no write at all); pauseSettle later, the read has returned.
func runPauseClient(ctx context.Context, env Env, s Step) error {
	h, err := FreshHolder(ctx, env)
	if err != nil {
		return err
	}
	if err := Sleep(ctx, pauseSettle(env.TTL())); err != nil {
		return err
	}
	Logf(env, "pause-client", ClientNode(h.Client), "client", "SIGSTOP client %d, holder of %s, for %v (TTL %v)", h.Client, h.Key, s.Duration.Round(time.Millisecond), env.TTL())
	if err := env.PauseClient(h.Client); err != nil {
		return err
	}
	sleepErr := Sleep(ctx, s.Duration)
	if err := env.ResumeClient(h.Client); err != nil {
		return err
	}
	Logf(env, "resume-client", ClientNode(h.Client), "client", "SIGCONT client %d", h.Client)
	return sleepErr
}

var faultStarveRenewals = &Fault{
	Name:  "starve-renewals",
	Needs: Needs{Topology: TopologyAny, ClientRenews: true},
	Marks: []Mark{{Event: "starve-renewals", Heal: "renewals-resume", Cause: CauseStarvedRenewals}},
	Doc: "stall a fresh holder's watchdog (its renewals and its check of the lease's end) for 2-3 TTLs while its job " +
		"goes on, as a watchdog thread starved of CPU or of its executor is (redisson/redisson#5698): the lease runs " +
		"out on the server, the holder works on",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1))}
	},
	Span:   HeldSpan,
	Inject: runStarveRenewals,
}

// runStarveRenewals stalls a fresh holder's watchdog: a holder near the end
// of its job would release before its lease ran out.
func runStarveRenewals(ctx context.Context, env Env, s Step) error {
	ce, err := ClientControls(env)
	if err != nil {
		return err
	}
	h, err := FreshHolder(ctx, env)
	if err != nil {
		return err
	}
	if err := ce.StarveRenewals(h.Client, s.Duration); err != nil {
		return err
	}
	Logf(env, "starve-renewals", ClientNode(h.Client), "client", "client %d's watchdog starved for %v (TTL %v): no renewal of %s, its job goes on",
		h.Client, s.Duration.Round(time.Millisecond), env.TTL(), h.Key)
	sleepErr := Sleep(ctx, s.Duration)
	Logf(env, "renewals-resume", ClientNode(h.Client), "client", "client %d's watchdog runs again", h.Client)
	return sleepErr
}

// The reply faults: a client's next acquire or release runs on the server,
// and its reply is dropped (the connection closed as it arrives) or the
// operation's context cancelled with the reply on the wire. What the library
// then tells the application is the question: "unknown", a grant it waited
// for, or a definite answer that is wrong.
var (
	faultCancelAcquire = replyFault("cancel-acquire", history.FAcquire, "cancel",
		"cancel a client's next acquire with its reply on the wire (the SET ran): a library that reports the "+
			"cancel as \"not acquired\" leaves a lock nobody knows it holds until its TTL")
	faultCancelRelease = replyFault("cancel-release", history.FRelease, "cancel",
		"cancel a fresh holder's release with its reply on the wire (the delete ran): the library waits for the "+
			"reply, or reports unknown")
	faultDropReleaseReply = replyFault("drop-release-reply", history.FRelease, "drop",
		"drop the reply of a fresh holder's release (its connection closed as the reply arrives; the delete ran): "+
			"unknown to the client, or retried by the library, whose second try finds nothing to delete")
)

// replyFault arms mode on a client's next op: a fresh holder's release (a
// holder near the end of its job would release before the fault is armed),
// or any live client's next acquire.
func replyFault(name, op, mode, doc string) *Fault {
	// The moment is the fault reaching the call in flight: an exec
	// program's cancel drawn after the answer reaches nothing.
	m := Mark{Event: name, Heal: name + "-done", Cause: CauseReply, Moment: marks.MomentReply}
	return &Fault{
		Name:  name,
		Needs: Needs{Topology: TopologyAny, Replies: mode},
		Marks: []Mark{m},
		Doc:   doc,
		PlanStep: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Node: rng.IntN(64), Duration: 2 * p.TTL}
		},
		Span: HeldSpan,
		Inject: func(ctx context.Context, env Env, s Step) error {
			ce, err := ClientControls(env)
			if err != nil {
				return err
			}
			client := s.Node % max(1, ce.NumClients())
			var h Holder
			if op == history.FRelease {
				if h, err = FreshHolder(ctx, env); err != nil {
					return err
				}
				client = h.Client
			}
			if err := ce.ArmReply(client, op, mode); err != nil {
				return err
			}
			Logf(env, name, ClientNode(client), "client", "client %d's next %s: %s its reply (the command runs on the server)", client, op, mode)
			// A holder's window ends with its release; an acquire's
			// with the step.
			deadline := time.Now().Add(s.Duration)
			for time.Now().Before(deadline) && (op != history.FRelease || holds(env, h)) {
				if err := Sleep(ctx, 20*time.Millisecond); err != nil {
					return err
				}
			}
			Logf(env, name+"-done", ClientNode(client), "client", "client %d's %s window closed", client, name)
			return nil
		},
	}
}

// holds reports whether h's grant is still among the holders.
func holds(env Env, h Holder) bool {
	for _, o := range env.Holders() {
		if o.Client == h.Client && o.Token == h.Token {
			return true
		}
	}
	return false
}

// pauseSettle is how long after a grant pause-client waits: past a read on
// loopback (a few ms, tens under CI's load), inside the first step's think
// (60-150 ms in the scenarios), a small share of the lease.
func pauseSettle(ttl time.Duration) time.Duration { return min(ttl/20, 40*time.Millisecond) }

var faultSkewClient = &Fault{
	Name:  "skew-client",
	Needs: Needs{Topology: TopologyAny},
	Marks: []Mark{{Event: "skew-client", Heal: "unskew-client", Cause: CauseClientClock}},
	Doc:   "slow a holder's own clock (rate < 1): it believes its lease lasts longer than it does",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		// At rate r the client renews every TTL/(3r) of true time: below
		// 1/3 its lease runs out on the server before it renews.
		return Step{Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1)), Rate: 0.1 + float64(rng.IntN(3))*0.05}
	},
	Span:   HeldSpan,
	Inject: runSkewClient,
}

func runSkewClient(ctx context.Context, env Env, s Step) error {
	h, err := FreshHolder(ctx, env)
	if err != nil {
		return err
	}
	if err := env.SkewClient(h.Client, 0, s.Rate); err != nil {
		return err
	}
	Logf(env, "skew-client", ClientNode(h.Client), "client", "client %d's clock now runs at %.2fx", h.Client, s.Rate)
	sleepErr := Sleep(ctx, s.Duration)
	if err := env.SkewClient(h.Client, 0, 1); err != nil {
		return err
	}
	Logf(env, "unskew-client", ClientNode(h.Client), "client", "client %d's clock back to true rate", h.Client)
	return sleepErr
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
