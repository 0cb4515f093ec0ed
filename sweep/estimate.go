package sweep

import (
	"math"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// BackToBackTimeLimit is a back-to-back sweep's default workload per trial:
// long enough that the fixed cost of a trial (cluster up, stop, check, down)
// is a small share of it, short enough that a cell's stopping rule is checked
// every couple of minutes.
const BackToBackTimeLimit = 2 * time.Minute

// TrialOverhead is what a trial costs beyond its workload on the 2-core
// machine, from the phase lines of run.log: cluster up ~2.3 s, server check,
// resource and clients ~0.1 s, heal ~0-2 s, stop 0.5-7 s (each client
// finishes its job: up to 60 critical sections), check ~0.7-1.5 s (2-minute
// histories), down ~0.1 s: 4-8 s measured with `none`. A WAIT configuration
// waits out its clients' last acquires on top.
const TrialOverhead = 8 * time.Second

// FaultEstimate is what one fault axis point is expected to yield.
type FaultEstimate struct {
	Name          string
	Faults        []string
	Unit          string  // failover | fault
	PerTrial      float64 // opportunities in one trial
	PerMinute     float64 // opportunities per minute of trial wall time
	TrialsPerCell int     // fixed trials, or those the stopping rule is expected to take
}

// Estimation is a sweep's expected wall time.
type Estimation struct {
	TimeLimit time.Duration
	PerTrial  time.Duration
	Trials    int
	Total     time.Duration
	Faults    []FaultEstimate
}

// Estimate is the expected wall time of a plan: the fixed trials, or with
// --until-ci the trials each cell needs for the worst case of the rule
// (P = 1/2) when the stopping rule asks more (at most --max-trials), or with
// --min-failovers the trials to reach that many opportunities. A shard counts
// its own trials.
func Estimate(p Plan) Estimation {
	limit := time.Duration(p.TimeLimit)
	if limit == 0 {
		if sc, err := scenario.Get(p.Scenario); err == nil {
			limit = sc.TimeLimit
		}
	}
	e := Estimation{TimeLimit: limit, PerTrial: limit + TrialOverhead}
	need := p.MinFailovers
	if z, h := p.OpportunitiesFor(); max(z, h) > need {
		need = max(z, h)
	}
	trialsFor := func(perTrial float64) int {
		if p.Adaptive() && perTrial > 0 {
			return min(p.MaxTrials, max(p.Trials, int(math.Ceil(float64(need)/perTrial))))
		}
		return p.Trials
	}
	cells := p.Cells()
	for _, f := range p.Faults {
		// A fault kind that maps per deployment is shown as it runs on the
		// first configuration it has a cell for (each cell is counted below
		// with its own).
		for _, c := range cells {
			if c.Fault.Name != f.Name {
				continue
			}
			fe := FaultEstimate{Name: f.Name, Faults: c.Fault.Faults, Unit: c.Fault.Unit()}
			fe.PerTrial = opportunitiesPerTrial(p, c, limit)
			fe.PerMinute = fe.PerTrial / e.PerTrial.Minutes()
			fe.TrialsPerCell = trialsFor(fe.PerTrial)
			e.Faults = append(e.Faults, fe)
			break
		}
	}
	for ci, c := range cells {
		for n := 0; n < trialsFor(opportunitiesPerTrial(p, c, limit)); n++ {
			if p.Owns(ci, n) {
				e.Trials++
			}
		}
	}
	e.Total = time.Duration(float64(e.PerTrial) * float64(e.Trials) / float64(max(1, p.Parallel)))
	return e
}

// opportunitiesPerTrial is how many injections of the fault fit in one
// trial's workload, from the schedule the runner plans (on a schedule) or
// the measured cycle (back to back).
func opportunitiesPerTrial(p Plan, cell Cell, limit time.Duration) float64 {
	f := cell.Fault
	cfg, err := p.RunConfig(cell, 0, "/nonexistent")
	if err != nil {
		return 0
	}
	if !p.BackToBack {
		return float64(len(cfg.Schedule))
	}
	var cycle time.Duration
	for _, k := range f.Faults {
		var c time.Duration
		if nf, err := nemesis.Lookup(k); err == nil {
			c = nf.Cycle // measured, in the catalog entry
		}
		if c == 0 {
			// The planned span of the fault's steps (their held durations
			// drawn from the seed), or of a bare step.
			step := nemesis.Step{Fault: k}
			for _, s := range cfg.Schedule {
				if s.Fault == k {
					step = s
					break
				}
			}
			c = nemesis.Span(step, cfg.PlanParamsForEstimate())
		}
		cycle += c
	}
	cycle /= time.Duration(max(1, len(f.Faults)))
	usable := limit - runner.Warmup - runner.Settle
	if cycle <= 0 || usable <= 0 {
		return 0
	}
	return usable.Seconds() / cycle.Seconds()
}
