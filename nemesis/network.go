package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Network faults on the primary's proxy (--net-proxy, cluster/netproxy.go):
// toxiproxy's toxics on the connections between the primary and everyone
// who reaches it, clients, Sentinels and replicas alike, as a netem qdisc on
// the primary's interface would be. They join the catalog in faults.go.
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
		func(n NetSizes) (cluster.Toxic, string) {
			return cluster.Toxic{Type: "latency", Stream: "downstream", Toxicity: 1,
					Attributes: map[string]int64{"latency": n.Latency.Milliseconds(), "jitter": n.Jitter.Milliseconds()}},
				fmt.Sprintf("every reply delayed %v ± %v", n.Latency, n.Jitter)
		}),
	// timeout 0: a connection it falls on passes nothing until the heal,
	// when toxiproxy closes every connection the toxic reached.
	networkFault("net-timeout",
		"a --net-share (half) of the primary's connections stop passing replies (toxiproxy timeout) for 0.6-0.9 s, "+
			"then every connection through its proxy is closed: commands ran, their answers never came (info)",
		func(PlanParams) (time.Duration, time.Duration) { return 600 * time.Millisecond, 300 * time.Millisecond },
		func(n NetSizes) (cluster.Toxic, string) {
			return cluster.Toxic{Type: "timeout", Stream: "downstream", Toxicity: n.Share, Attributes: map[string]int64{"timeout": 0}},
				fmt.Sprintf("%.0f%% of the connections pass no reply", 100*n.Share)
		}),
	networkFault("net-reset",
		"for 0.3-0.5 s each of the primary's connections is closed as its next reply arrives, the "+
			"reply dropped (toxiproxy reset_peer): the command ran, its client learns nothing (info) and reconnects",
		func(PlanParams) (time.Duration, time.Duration) { return 300 * time.Millisecond, 200 * time.Millisecond },
		func(NetSizes) (cluster.Toxic, string) {
			return cluster.Toxic{Type: "reset_peer", Stream: "downstream", Toxicity: 1, Attributes: map[string]int64{"timeout": 0}},
				"each connection closed at its next reply, the reply lost"
		}),
}

// networkFault is one network fault: the toxic made from the step's sizes,
// on the primary's proxy for a duration drawn from [min, min+spread]
// (hold), logged as name and healed as name+"-healed".
func networkFault(name, doc string, hold func(PlanParams) (min, spread time.Duration), toxic func(NetSizes) (cluster.Toxic, string)) *Fault {
	return &Fault{
		Name:  name,
		Doc:   doc,
		Needs: Needs{NetProxy: true},
		Marks: []Mark{{Event: name, Heal: name + "-healed", Cause: marks.CauseNetwork}},
		plan: func(rng *rand.Rand, p PlanParams) Step {
			lo, spread := hold(p)
			n := p.Net
			if n == (NetSizes{}) {
				n = DefaultNetSizes
			}
			return Step{Duration: lo + time.Duration(rng.Int64N(int64(spread)+1)), Net: &n}
		},
		span: heldSpan,
		inject: func(ctx context.Context, env Env, s Step) error {
			t, what := toxic(s.sizes())
			return holdToxic(ctx, env, s, name, t, what)
		},
		heal: clearToxics,
	}
}

// holdToxic puts t on the primary's proxy, logs event, holds it for the
// step's duration and removes it, logging the heal (event+"-healed").
func holdToxic(ctx context.Context, env Env, s Step, event string, t cluster.Toxic, what string) error {
	c := env.Cluster()
	sh, ok := c.(cluster.NetShaper)
	if !ok {
		return fmt.Errorf("%s needs a proxy in front of the primary: add --net-proxy (--runtime local, --topology sentinel)", event)
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	t.Name = event
	if err := sh.AddToxic(p.Name, t); err != nil {
		return err
	}
	logf(env, event, p.Name, cluster.RolePrimary, "on %s's proxy (clients, Sentinels and replicas alike) for %v: %s",
		p.Name, s.Duration.Round(time.Millisecond), what)
	sleepErr := sleep(ctx, s.Duration)
	// Even when the run is ending: a toxic left on would slow its heal.
	if err := sh.ClearToxics(p.Name); err != nil {
		return err
	}
	logf(env, event+"-healed", p.Name, cluster.RolePrimary, "toxic removed from %s's proxy", p.Name)
	return sleepErr
}

// clearToxics is the network faults' heal: no toxic left on any proxy.
func clearToxics(_ context.Context, env Env) error {
	if sh, ok := env.Cluster().(cluster.NetShaper); ok {
		return sh.ClearToxics("")
	}
	return nil
}
