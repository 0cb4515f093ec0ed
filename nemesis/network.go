package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Network faults on the primary's proxy (--net-proxy, cluster/netproxy.go):
// toxiproxy's toxics on the connections between the primary and everyone
// who reaches it, clients, Sentinels and replicas alike, as a netem qdisc on
// the primary's interface would be. They join the catalog list in faults.go.
//
// Sentinel's links cross the proxy too. A Sentinel whose link drops counts
// the time since its last reply (a PING a second), so with down-after 1 s a
// reset window of 0.3 s was enough for a quorum to fail over a live
// primary (net-reset, seed 1: two failovers and a double grant); the
// network scenarios run with down-after 3 s, above a ping period plus the
// longest stall, so that they show what clients make of slow, lost and
// reset replies, and the faults keep fixed sizes whatever --down-after is.

// NetSizes are the network faults' sizes (--net-latency, --net-jitter,
// --net-share); a step records the ones it was planned with.
type NetSizes struct {
	// Latency ± Jitter is added to every chunk the primary sends (replies,
	// the replication stream) under net-latency.
	Latency time.Duration `json:"latency_ns"`
	Jitter  time.Duration `json:"jitter_ns"`
	// Share is the share of the primary's connections that stop passing
	// data under net-timeout, 0..1.
	Share float64 `json:"share"`
}

// DefaultNetSizes: a round trip 200-400 ms longer, under a renewal period
// of TTL/3 at the scenarios' TTL; half the connections stalled.
var DefaultNetSizes = NetSizes{Latency: 300 * time.Millisecond, Jitter: 100 * time.Millisecond, Share: 0.5}

// sizes are the step's sizes, or the defaults for a step planned without.
// NetStep plans a network fault's step: the run's sizes (--net-latency,
// --net-jitter, --net-share), or the network's default.
func NetStep(_ *rand.Rand, p PlanParams) Step {
	n := p.Net
	if n == (NetSizes{}) {
		n = DefaultNetSizes
	}
	return Step{Net: &n}
}

func (s Step) sizes() NetSizes {
	if s.Net == nil {
		return DefaultNetSizes
	}
	return *s.Net
}

var networkFaults = []*Fault{
	networkFault("net-latency",
		"the primary's replies delayed --net-latency ± --net-jitter (300 ms ± 100 ms; toxiproxy latency on its proxy, "+
			"--net-proxy) for 3-6 renewal periods: acquires and renewals slow down, leases are measured from before the request",
		func(p PlanParams) (time.Duration, time.Duration) { return p.TTL, p.TTL },
		func(n NetSizes) ([]cluster.Toxic, string) {
			return []cluster.Toxic{{Type: "latency", Stream: "downstream", Toxicity: 1,
					Attributes: map[string]int64{"latency": n.Latency.Milliseconds(), "jitter": n.Jitter.Milliseconds()}}},
				fmt.Sprintf("every reply delayed %v ± %v (clients, Sentinels and replicas alike)", n.Latency, n.Jitter)
		}),
	// timeout 0: a connection it falls on passes nothing until the heal,
	// when toxiproxy closes every connection the toxic reached.
	networkFault("net-timeout",
		"a --net-share (half) of the primary's connections stop passing replies (toxiproxy timeout) for 0.6-0.9 s, "+
			"then every connection through its proxy is closed: commands ran, their answers never came (info)",
		func(PlanParams) (time.Duration, time.Duration) { return 600 * time.Millisecond, 300 * time.Millisecond },
		func(n NetSizes) ([]cluster.Toxic, string) {
			return []cluster.Toxic{{Type: "timeout", Stream: "downstream", Toxicity: n.Share, Attributes: map[string]int64{"timeout": 0}}},
				fmt.Sprintf("%.0f%% of the connections pass no reply (clients, Sentinels and replicas alike)", 100*n.Share)
		}),
	networkFault("net-reset",
		"for 0.3-0.5 s each of the primary's connections is closed as its next reply arrives, the "+
			"reply dropped (toxiproxy reset_peer): the command ran, its client learns nothing (info) and reconnects",
		func(PlanParams) (time.Duration, time.Duration) { return 300 * time.Millisecond, 200 * time.Millisecond },
		func(NetSizes) ([]cluster.Toxic, string) {
			return []cluster.Toxic{{Type: "reset_peer", Stream: "downstream", Toxicity: 1, Attributes: map[string]int64{"timeout": 0}}},
				"each connection closed at its next reply, the reply lost (clients, Sentinels and replicas alike)"
		}),
	// Both directions: WAIT waits for a replica's REPLCONF ACK (upstream)
	// to a write it received late (downstream). The clients' own proxy is
	// untouched: what it costs is the replication's share alone.
	needs(Needs{NetProxy: true, Replicas: 1, DialMap: true, Topology: cluster.NeedReplicas}, networkFault("net-slow-replication",
		"the primary's replication links (and Sentinel's) delayed --net-latency ± --net-jitter each way (300 ms ± 100 ms; "+
			"the clients' path untouched) for 3-6 renewal periods: what WAIT and min-replicas-to-write cost on a slow link, "+
			"and how much a failover in it loses",
		func(p PlanParams) (time.Duration, time.Duration) { return p.TTL, p.TTL },
		func(n NetSizes) ([]cluster.Toxic, string) {
			attrs := map[string]int64{"latency": n.Latency.Milliseconds(), "jitter": n.Jitter.Milliseconds()}
			return []cluster.Toxic{
					{Name: "-down", Type: "latency", Stream: "downstream", Toxicity: 1, Attributes: attrs, ReplicationOnly: true},
					{Name: "-up", Type: "latency", Stream: "upstream", Toxicity: 1, Attributes: attrs, ReplicationOnly: true}},
				fmt.Sprintf("the replication stream and its acknowledgements delayed %v ± %v each way (replicas and Sentinels; not the clients)", n.Latency, n.Jitter)
		})),
	faultSlowLinkFailover,
}

// faultSlowLinkFailover is the failover race with the replication link
// slowed, not cut: what a failover inside a slow link loses, against
// kill-primary on the same proxies (the fast link).
var faultSlowLinkFailover = &Fault{
	Name:     "slow-link-failover",
	Failover: true, Needs: Needs{NetProxy: true, Replicas: 1, DialMap: true},
	Marks: []Mark{{Event: "slow-link-failover", Heal: "slow-link-healed", Cause: CauseFailover, Moment: marks.MomentGrant},
		{Event: "kill", Heal: "restart", Cause: CauseFailover}},
	Doc: "the primary's replication links (and Sentinel's) delayed --net-latency ± --net-jitter each way (the clients' " +
		"path untouched), a fresh grant awaited, then the primary SIGKILLed: Sentinel promotes a replica a link's delay " +
		"behind; against kill-primary on the same proxies, what a slow link loses",
	PlanStep: NetStep,
	Span:     func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 6*time.Second },
	Inject:   runSlowLinkFailover,
	Restore:  ClearToxics,
}

// runSlowLinkFailover slows the primary's replication both ways, waits for
// a grant made from then on (its copy now travels the slow link) and kills
// the primary at once, before the delay has passed. The link stays slow
// until Sentinel has promoted a replica (a network does not speed up when
// a node dies), then the toxics come off and the old primary rejoins as a
// replica, as after kill-primary.
func runSlowLinkFailover(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	sh, ok := c.(cluster.NetShaper)
	if !ok {
		return fmt.Errorf("slow-link-failover needs a proxy in front of the primary: add --net-proxy")
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	n := s.sizes()
	if err := slowReplication(sh, p.Name, "slow-link-failover", n); err != nil {
		return err
	}
	Logf(env, "slow-link-failover", p.Name, cluster.RolePrimary, "replication from %s delayed %v ± %v each way (replicas and Sentinels; not the clients)",
		p.Name, n.Latency, n.Jitter)
	why, err := awaitFreshGrant(ctx, env, 2*env.TTL()+2*time.Second)
	if err != nil {
		_ = sh.ClearToxics(p.Name)
		return err
	}
	Logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d) inside the slow link: %s", p.Name, p.PID, why)
	if err := c.Kill(p.Name); err != nil {
		return errors.Join(err, sh.ClearToxics(p.Name))
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	np, werr := c.WaitFailover(wctx, p.Name)
	cancel()
	if err := sh.ClearToxics(p.Name); err != nil {
		return errors.Join(werr, err)
	}
	Logf(env, "slow-link-healed", p.Name, cluster.RolePrimary, "toxics removed from %s's proxy", p.Name)
	if werr != nil {
		return werr
	}
	Logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s; %s was primary", np.Name, p.Name)
	if err := c.Restart(ctx, p.Name, cluster.AsReplica); err != nil {
		return err
	}
	Logf(env, "restart", p.Name, cluster.RoleReplica, "%s restarted as a replica of %s", p.Name, np.Name)
	return nil
}

// needs sets what a fault needs beyond the network faults' own.
func needs(n Needs, f *Fault) *Fault { f.Needs = n; return f }

// networkFault is one network fault: the toxic made from the step's sizes,
// on the primary's proxy for a duration drawn from [min, min+spread]
// (hold), logged as name and healed as name+"-healed".
func networkFault(name, doc string, hold func(PlanParams) (min, spread time.Duration), toxics func(NetSizes) ([]cluster.Toxic, string)) *Fault {
	return &Fault{
		Name: name,
		Doc:  doc,
		// Any deployment --net-proxy serves (Sentinel, Redlock, Cluster):
		// the proxies are the need, and the deployment's own check says
		// where they can stand.
		Needs: Needs{NetProxy: true, Topology: cluster.NeedAny},
		Marks: []Mark{{Event: name, Heal: name + "-healed", Cause: marks.CauseNetwork}},
		PlanStep: func(rng *rand.Rand, p PlanParams) Step {
			lo, spread := hold(p)
			s := NetStep(rng, p)
			s.Duration = lo + time.Duration(rng.Int64N(int64(spread)+1))
			return s
		},
		Span: HeldSpan,
		Inject: func(ctx context.Context, env Env, s Step) error {
			ts, what := toxics(s.sizes())
			return holdToxic(ctx, env, s, name, ts, what)
		},
		Restore: ClearToxics,
	}
}

// holdToxic puts ts on the primary's proxies, logs event, holds them for
// the step's duration and removes them, logging the heal (event+"-healed").
// A toxic's Name is a suffix to event (toxiproxy wants one name a toxic).
func holdToxic(ctx context.Context, env Env, s Step, event string, ts []cluster.Toxic, what string) error {
	c := env.Cluster()
	sh, ok := c.(cluster.NetShaper)
	if !ok {
		return fmt.Errorf("%s needs a proxy in front of the primary: add --net-proxy", event)
	}
	p, err := c.Primary(ctx)
	if err != nil {
		// Redlock's N primaries: the step's node (the first, as planned:
		// one node of N slowed, stalled or reset).
		var perr error
		if p, perr = PickNode(c, s); perr != nil {
			return err
		}
	}
	for _, t := range ts {
		t.Name = event + t.Name
		if err := sh.AddToxic(p.Name, t); err != nil {
			_ = sh.ClearToxics(p.Name)
			return err
		}
	}
	Logf(env, event, p.Name, cluster.RolePrimary, "on %s's proxy for %v: %s",
		p.Name, s.Duration.Round(time.Millisecond), what)
	sleepErr := Sleep(ctx, s.Duration)
	// Even when the run is ending: a toxic left on would slow its heal.
	if err := sh.ClearToxics(p.Name); err != nil {
		return err
	}
	Logf(env, event+"-healed", p.Name, cluster.RolePrimary, "toxic removed from %s's proxy", p.Name)
	return sleepErr
}

// ClearToxics is the network faults' Restore: no toxic left on any proxy.
func ClearToxics(_ context.Context, env Env) error {
	if sh, ok := env.Cluster().(cluster.NetShaper); ok {
		return sh.ClearToxics("")
	}
	return nil
}
