package shrink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// Schedule shrinking (shrink --rerun) works on real runs, not on a
// history: every candidate is run again, with several seeds, because a
// rerun is a new run — the same faults at the same offsets meet other
// timings. The search itself is pure and lives here; what a try runs (the
// runner, a run folder per try) is the caller's Trial.

// Fault is one fault a run injected, as a rerun schedules it: the fault
// and the offset from the workload's start it fires at (--faults-at's
// OFFSET:FAULT).
type Fault struct {
	Name string        `json:"fault"`
	At   time.Duration `json:"at_ns"`
}

// Schedule is one candidate: which faults fire, and how long the workload
// runs.
type Schedule struct {
	Faults    []Fault       `json:"faults"`
	TimeLimit time.Duration `json:"time_limit_ns"`
}

// FaultsAt is the schedule as --faults-at takes it.
func (s Schedule) FaultsAt() string {
	parts := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		parts[i] = f.At.String() + ":" + f.Name
	}
	return strings.Join(parts, ",")
}

func (s Schedule) String() string {
	n := "faults"
	if len(s.Faults) == 1 {
		n = "fault"
	}
	return fmt.Sprintf("%d %s (%s), %v of workload", len(s.Faults), n, s.FaultsAt(), s.TimeLimit)
}

func (s Schedule) key() string { return s.FaultsAt() + "/" + s.TimeLimit.String() }

// Trial runs the scenario with schedule s and seed, and says whether the
// violation showed again. An error (the run could not be carried out, or
// was interrupted) ends the search.
type Trial func(ctx context.Context, s Schedule, seed int64) (bool, error)

// RerunOptions shape a schedule shrink.
type RerunOptions struct {
	// Seeds are the seeds a candidate is run with, in order; it holds when
	// Min of them reproduce the violation. A candidate stops at its Min-th
	// reproduction, or as soon as the seeds left cannot make Min.
	Seeds []int64
	Min   int
	// MinTimeLimit is the shortest time limit that leaves room for faults
	// (each run to its planned end, and the settle tail): where the time
	// search starts.
	MinTimeLimit func(faults []Fault) (time.Duration, error)
	// Resolution is the step of the time limits tried (default 1 s).
	Resolution time.Duration
	Try        Trial
}

// Tried is one candidate's verdict.
type Tried struct {
	Schedule   Schedule `json:"schedule"`
	Seeds      []int64  `json:"seeds"`      // the seeds run, in order
	Reproduced []int64  `json:"reproduced"` // those whose run showed the violation
	Holds      bool     `json:"holds"`
}

// ScheduleResult is a schedule shrink's outcome: After is the smallest
// schedule found that holds (Before itself when none smaller did; the run
// that is being shrunk is its evidence).
type ScheduleResult struct {
	Before Schedule `json:"before"`
	After  Schedule `json:"after"`
	Tried  []Tried  `json:"tried"`
	Runs   int      `json:"runs"`
}

// Last is the verdict on After, nil when After is Before (never rerun).
func (r *ScheduleResult) Last() *Tried {
	for i := len(r.Tried) - 1; i >= 0; i-- {
		if r.Tried[i].Schedule.key() == r.After.key() {
			return &r.Tried[i]
		}
	}
	return nil
}

// ShrinkSchedule finds a small schedule that still reproduces the
// violation: first the faults, by ddmin over those the run injected at the
// run's own time limit (never none of them: a violation with no fault is
// the lock's or the checker's bug, which the baseline scenario is for),
// so that without any one of the kept faults the violation did not show in
// Min of the seeds; then the time limit, from the shortest the kept faults
// allow, by bisection up to the run's own. The time search assumes that a
// longer workload reproduces at least as often, which holds for the
// violation a fault causes within its span. On an error (a run that failed,
// an interrupt) it returns what it found so far with the error.
func ShrinkSchedule(ctx context.Context, before Schedule, o RerunOptions) (*ScheduleResult, error) {
	if o.Min < 1 || o.Min > len(o.Seeds) {
		return nil, fmt.Errorf("want 1 to %d reproductions of %d seeds, not %d", len(o.Seeds), len(o.Seeds), o.Min)
	}
	if o.Resolution <= 0 {
		o.Resolution = time.Second
	}
	res := &ScheduleResult{Before: before, After: before}
	cache := map[string]bool{before.key(): true}
	var stop error
	holds := func(s Schedule) bool {
		if ok, seen := cache[s.key()]; seen || stop != nil {
			return ok
		}
		t := Tried{Schedule: s}
		for i, seed := range o.Seeds {
			ok, err := o.Try(ctx, s, seed)
			if err != nil {
				stop = err
				return false
			}
			res.Runs++
			t.Seeds = append(t.Seeds, seed)
			if ok {
				t.Reproduced = append(t.Reproduced, seed)
			}
			left := len(o.Seeds) - i - 1
			if len(t.Reproduced) >= o.Min || len(t.Reproduced)+left < o.Min {
				break
			}
		}
		t.Holds = len(t.Reproduced) >= o.Min
		res.Tried = append(res.Tried, t)
		cache[s.key()] = t.Holds
		return t.Holds
	}

	all := make([]int, len(before.Faults))
	for i := range all {
		all[i] = i
	}
	kept := ddmin(all, func(set []int) bool {
		s := Schedule{TimeLimit: before.TimeLimit}
		for _, i := range set {
			s.Faults = append(s.Faults, before.Faults[i])
		}
		return holds(s)
	})
	// After a stop every test answers no, so kept is the last set that held.
	res.After.Faults = nil
	for _, i := range kept {
		res.After.Faults = append(res.After.Faults, before.Faults[i])
	}
	if stop != nil {
		return res, stop
	}

	floor, err := o.MinTimeLimit(res.After.Faults)
	if err != nil {
		return res, fmt.Errorf("the shortest time limit for %s: %w", Schedule{Faults: res.After.Faults}.FaultsAt(), err)
	}
	floor = max(floor, o.Resolution)
	// lo never held (or is the floor, untried); hi holds.
	lo, hi := floor, before.TimeLimit
	if lo < hi && holds(Schedule{Faults: res.After.Faults, TimeLimit: lo}) {
		hi = lo
	}
	for hi-lo > o.Resolution && stop == nil {
		mid := lo + max(((hi-lo)/2).Truncate(o.Resolution), o.Resolution)
		if holds(Schedule{Faults: res.After.Faults, TimeLimit: mid}) {
			hi = mid
		} else {
			lo = mid
		}
	}
	res.After.TimeLimit = hi
	return res, stop
}

// Pick is the violation a shrink is about, from a run's verdicts: the
// first of kind on key (either may be empty), and with no kind asked for
// the first that falsifies a verdict; the history shrink picks the same.
func Pick(res *checker.Result, kind, key string) (*checker.Violation, error) {
	if kind != "" && !slices.Contains(checker.ViolationKinds, kind) {
		return nil, fmt.Errorf("unknown violation kind %q (one of %s)", kind, strings.Join(checker.ViolationKinds, ", "))
	}
	return pick(res, kind, key)
}
