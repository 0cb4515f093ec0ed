package nemesis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Step is one planned fault: when it fires (offset from the start of the
// workload), which fault, and its parameters. Targets are chosen at run time.
type Step struct {
	At       time.Duration `json:"at_ns"`
	Fault    string        `json:"fault"`
	Duration time.Duration `json:"duration_ns,omitempty"` // how long the fault is held before its heal
	Offset   string        `json:"offset,omitempty"`      // clock faults: libfaketime offset
	Rate     float64       `json:"rate,omitempty"`        // client clock skew: rate of the skewed clock
	Node     int           `json:"node,omitempty"`        // per-node faults: index of the node (or client) to start from
	// Gap, in a back-to-back schedule, is how long after the previous fault
	// healed and the cluster is ready again this one fires; At is then only
	// the earliest it can (each fault counted as taking MinSpan).
	Gap time.Duration `json:"gap_ns,omitempty"`
}

func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs %s", s.At.Seconds(), s.Fault)
	if s.Duration > 0 {
		fmt.Fprintf(&b, " for %v", s.Duration.Round(time.Millisecond))
	}
	if s.Offset != "" {
		fmt.Fprintf(&b, " offset %s", s.Offset)
	}
	if s.Rate != 0 {
		fmt.Fprintf(&b, " rate %.2f", s.Rate)
	}
	return b.String()
}

// PlanParams shape a schedule.
type PlanParams struct {
	Faults    []string // fault kinds to draw from; empty = no faults
	Seed      int64
	TimeLimit time.Duration // workload length; faults fire inside it
	Interval  time.Duration // mean gap between faults
	Warmup    time.Duration // fault-free start, so clients are holding locks when the first fault fires
	Settle    time.Duration // fault-free tail before the time limit
	TTL       time.Duration
	DownAfter time.Duration
	// BackToBack fires each fault as soon as the previous one healed and the
	// cluster is ready again, after a random Gap of at most MaxGap, instead
	// of at fixed times spaced by each fault's planned span and Interval.
	// The runner polls readiness, so no fault waits out a span its
	// predecessor did not need. Interval is not used.
	BackToBack bool
}

// Back-to-back schedules: the gap after a heal is uniform in [0, MaxGap] (so
// that faults do not lock onto the workload's rhythm), and a fault is planned
// as if it took at least MinSpan, which bounds how many steps a schedule
// lists.
const (
	MaxGap  = 500 * time.Millisecond
	MinSpan = time.Second
)

// Span is how long a step and its aftermath are planned to occupy: a
// scheduled fault fires only if its span ends before the settle tail.
func Span(s Step, p PlanParams) time.Duration {
	f, err := Lookup(s.Fault)
	if err != nil {
		return 0
	}
	return f.span(s, p)
}

// Plan draws a schedule from the seed: the same parameters and seed always give
// the same steps. Each fault is given time to run its course (heal and
// failover) before the next one fires.
func Plan(p PlanParams) ([]Step, error) {
	byName := map[string]*Fault{}
	for _, f := range p.Faults {
		ft, err := Lookup(f)
		if err != nil {
			return nil, err
		}
		byName[f] = ft
	}
	if len(p.Faults) == 0 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x6c6f636b6a657073))
	var steps []Step
	t := p.Warmup
	for {
		kind := p.Faults[rng.IntN(len(p.Faults))]
		s := byName[kind].plan(rng, p)
		s.Fault, s.At = kind, t
		if s.At+byName[kind].span(s, p) > p.TimeLimit-p.Settle {
			break
		}
		if p.BackToBack {
			s.Gap = time.Duration(rng.Int64N(int64(MaxGap) + 1))
			if len(steps) > 0 {
				s.At += s.Gap
			}
			steps = append(steps, s)
			t = s.At + MinSpan
			continue
		}
		steps = append(steps, s)
		gap := p.Interval/2 + time.Duration(rng.Int64N(int64(p.Interval)+1))
		t += byName[kind].span(s, p) + gap
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("--time-limit %v leaves no room for a %s fault after the %v warm-up: use at least %v", p.TimeLimit, p.Faults[0], p.Warmup, p.Warmup+p.Settle+byName[p.Faults[0]].span(Step{}, p)+time.Second)
	}
	return steps, nil
}
