package nemesis

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/knob"
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
	Net      *NetSizes     `json:"net,omitempty"`         // network faults: their sizes
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
	// Net sizes the network faults (zero: DefaultNetSizes).
	Net NetSizes
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
	return f.Span(s, p)
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
	var need time.Duration // the first step's end: what the time limit must reach
	var first string       // and its fault
	t := p.Warmup
	for {
		kind := p.Faults[rng.IntN(len(p.Faults))]
		s := byName[kind].PlanStep(rng, p)
		s.Fault, s.At = kind, t
		if need == 0 {
			need, first = s.At+byName[kind].Span(s, p)+p.Settle, kind
		}
		if s.At+byName[kind].Span(s, p) > p.TimeLimit-p.Settle {
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
		t += byName[kind].Span(s, p) + gap
	}
	if len(steps) == 0 {
		// The minimum is the first step's, as this seed plans it: an empty
		// step's span once left out a fault's own duration, and the
		// message asked for 7s of a user who had given 8s.
		return nil, fmt.Errorf("--time-limit %v leaves no room for a %s fault after the %v warm-up: use at least %v", p.TimeLimit, first, p.Warmup, need.Truncate(time.Second)+time.Second)
	}
	return steps, nil
}

// ParseFaultsAt reads an explicit schedule, "3.0s:cut-replication,12.5s:kill-primary"
// (--faults-at): each entry an offset from the start of the workload (a
// duration, or seconds) and a fault. It checks the syntax and the names;
// PlanAt checks the offsets against the run's time limit and each other.
// The steps come back in time order: the order they are listed in does not
// matter.
func ParseFaultsAt(v string) ([]Step, error) {
	var steps []Step
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		at, name, ok := strings.Cut(entry, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(at) == "" {
			return nil, fmt.Errorf("%q: want OFFSET:FAULT entries separated by commas, e.g. 3.0s:cut-replication,12.5s:kill-primary", entry)
		}
		d, err := knob.ParseDuration(at)
		if err != nil {
			return nil, fmt.Errorf("%q: offset %w", entry, err)
		}
		name = strings.TrimSpace(name)
		if err := Known(name); err != nil {
			return nil, fmt.Errorf("%q: %w", entry, err)
		}
		steps = append(steps, Step{At: d, Fault: name})
	}
	slices.SortStableFunc(steps, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
	return steps, nil
}

// FormatFaultsAt is the --faults-at value of steps (their offsets and
// faults only), the inverse of ParseFaultsAt.
func FormatFaultsAt(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.At.String() + ":" + s.Fault
	}
	return strings.Join(parts, ",")
}

// PlanAt is Plan for an explicit schedule (--faults-at): the listed faults
// fire at the listed offsets instead of where the seed puts them, and
// everything else of a step (a held fault's duration, a clock fault's
// offset, a node) is drawn from the seed exactly as Plan draws the step in
// the same position: the same generator, one draw for the kind (whose
// answer the listed fault replaces), the fault's own draws, one for the gap.
// So a --faults-at equal to a run's recorded schedule plans that schedule
// again, durations included. It refuses an offset before the warm-up or
// past the time limit, a step whose planned span (heal and failover) does
// not end before the settle tail, and steps whose spans overlap (the
// nemesis runs one step at a time: the later one would fire late).
func PlanAt(p PlanParams, at []Step) ([]Step, error) {
	if len(at) == 0 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x6c6f636b6a657073))
	kinds := max(len(p.Faults), 1)
	steps := make([]Step, 0, len(at))
	var prevEnd time.Duration
	for i, a := range at {
		f, err := Lookup(a.Fault)
		if err != nil {
			return nil, err
		}
		entry := a.At.String() + ":" + a.Fault
		switch {
		case a.At < p.Warmup:
			return nil, fmt.Errorf("%s fires before the %v warm-up (clients are not holding locks yet): use an offset of %v or more", entry, p.Warmup, p.Warmup)
		case a.At >= p.TimeLimit:
			return nil, fmt.Errorf("%s is past --time-limit %v: raise --time-limit or use an earlier offset", entry, p.TimeLimit)
		}
		_ = rng.IntN(kinds) // Plan's draw of the kind
		s := f.PlanStep(rng, p)
		s.Fault, s.At = a.Fault, a.At
		if p.BackToBack {
			_ = rng.Int64N(int64(MaxGap) + 1)
		} else {
			_ = rng.Int64N(int64(p.Interval) + 1)
		}
		span := f.Span(s, p)
		if i > 0 && s.At < prevEnd {
			prev := steps[i-1]
			return nil, fmt.Errorf("%s fires before %s:%s has run its course (planned until %v): the nemesis runs one fault at a time; use an offset of %v or more", entry, prev.At, prev.Fault, prevEnd, prevEnd)
		}
		if end := s.At + span; end > p.TimeLimit-p.Settle {
			return nil, fmt.Errorf("%s is planned to run its course (heal and failover) until %v, past --time-limit %v less its %v settle tail: use --time-limit %v or more, or an earlier offset", entry, end, p.TimeLimit, p.Settle, ceilSecond(end+p.Settle))
		}
		prevEnd = s.At + span
		steps = append(steps, s)
	}
	return steps, nil
}

// MinTimeLimit is the shortest --time-limit that leaves room for planned
// steps: the last one's span ended and the settle tail after it, in whole
// seconds.
func MinTimeLimit(p PlanParams, steps []Step) time.Duration {
	var end time.Duration
	for _, s := range steps {
		end = max(end, s.At+Span(s, p))
	}
	return ceilSecond(end + p.Settle)
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}
