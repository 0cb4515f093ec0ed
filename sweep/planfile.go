package sweep

// A plan as a user writes it (a sweep file or the flags) and as the sweep
// folder keeps it: reading, defaults, validation, rewriting.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// ReadPlanFile reads a sweep file (JSON, the shape of Plan). Configurations
// and faults may be given by catalog name alone ({"name": "wait-1-100ms"}).
func ReadPlanFile(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read sweep file: %w", err)
	}
	var p Plan
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
	}
	for i, c := range p.Configs {
		if bare := (Config{Name: c.Name}); len(c.Opts) == 0 && reflect.DeepEqual(c, bare) {
			if p.Configs[i], err = LookupConfig(c.Name); err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
			}
		}
	}
	for i, f := range p.Faults {
		// 0 is "the fault's own"; below 0 is a typo to name.
		if f.Duration < 0 || f.Interval < 0 {
			return Plan{}, fmt.Errorf("sweep file %s: fault %q: duration %s, interval %s: want durations above 0, or leave them out for the fault's own",
				path, f.Name, time.Duration(f.Duration), time.Duration(f.Interval))
		}
		if len(f.Faults) == 0 {
			lf, err := LookupFault(f.Name)
			if err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
			}
			lf.Duration, lf.Interval = f.Duration, f.Interval
			p.Faults[i], f = lf, lf
		}
		if f.Duration > 0 {
			if err := f.takesDuration(); err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: fault %q: duration %s: %w; leave duration out", path, f.Name, time.Duration(f.Duration), err)
			}
		}
	}
	return p, nil
}

// Defaults fills what a plan leaves out.
func (p *Plan) Defaults() {
	if p.Scenario == "" {
		p.Scenario = "failover-race"
	}
	if p.Seed == 0 {
		p.Seed = 1
	}
	if p.Trials == 0 {
		p.Trials = DefaultTrials
	}
	if p.Parallel == 0 {
		p.Parallel = 1
	}
	if p.MinFailovers > 0 && p.MaxTrials == 0 {
		p.MaxTrials = 4 * max(p.Trials, p.MinFailovers)
	}
	if p.UntilCI > 0 && p.MaxTrials == 0 {
		p.MaxTrials = DefaultMaxTrials
	}
}

// DefaultMaxTrials caps the trials of a cell under --until-ci: at the
// back-to-back pace a 2-minute trial holds 20-40 opportunities, so 10 trials
// are 200 or more.
const DefaultMaxTrials = 10

// setting names a plan setting both ways a user can have typed it: the flag and
// the sweep file's field (--max-trials, "max_trials").
func setting(flag string) string {
	return fmt.Sprintf("--%s (%q in a sweep file)", flag, strings.ReplaceAll(flag, "-", "_"))
}

// Validate checks the plan by building the run config of every cell, so a
// bad knob is reported before the first trial rather than an hour in.
func (p Plan) Validate() error {
	if len(p.Configs) == 0 || len(p.Faults) == 0 {
		return fmt.Errorf("sweep: the matrix is empty (%d configurations × %d faults)", len(p.Configs), len(p.Faults))
	}
	if p.Trials < 1 {
		return fmt.Errorf("%s %d: want 1 or more", setting("trials"), p.Trials)
	}
	if p.Parallel < 1 || p.Parallel > 16 {
		return fmt.Errorf("%s %d: want 1 to 16", setting("parallel"), p.Parallel)
	}
	if p.TimeLimit < 0 {
		return fmt.Errorf("%s %v: want a workload above 0, or leave it out for the scenario's", setting("time-limit"), time.Duration(p.TimeLimit))
	}
	if p.MinFailovers < 0 {
		return fmt.Errorf("%s %d: want 0 (no minimum) or more", setting("min-failovers"), p.MinFailovers)
	}
	if p.MaxTrials < 0 {
		return fmt.Errorf("%s %d: want a cap of at least the trials, or leave it out", setting("max-trials"), p.MaxTrials)
	}
	if p.Adaptive() && p.MaxTrials < p.Trials {
		return fmt.Errorf("%s %d is below %s %d", setting("max-trials"), p.MaxTrials, setting("trials"), p.Trials)
	}
	// Written so that NaN, which fails every comparison, is refused too.
	if !(p.UntilCI >= 0 && p.UntilCI < 1) {
		return fmt.Errorf("%s %v: want an interval width between 0 and 1, e.g. 0.2", setting("until-ci"), p.UntilCI)
	}
	if !(p.Below >= 0 && p.Below < 1) {
		return fmt.Errorf("%s %v: want a rate between 0 and 1, e.g. 0.04", setting("below"), p.Below)
	}
	if p.Below > 0 && p.UntilCI == 0 {
		return fmt.Errorf("%s %v needs %s", setting("below"), p.Below, setting("until-ci"))
	}
	if s := p.Shard; s != nil && (s.Count < 1 || s.Index < 0 || s.Index >= s.Count) {
		return fmt.Errorf("--shard %d/%d: want I/N with 0 <= I < N", s.Index, s.Count)
	}
	seen := map[string]bool{}
	for _, c := range p.Configs {
		if !nameRE.MatchString(c.Name) || strings.Contains(c.Name, ".") {
			return fmt.Errorf("configuration name %q: letters, digits, '-', '_' and '+' only", c.Name)
		}
		if seen["c"+c.Name] {
			return fmt.Errorf("configuration %q appears twice", c.Name)
		}
		seen["c"+c.Name] = true
	}
	for _, f := range p.Faults {
		if seen["f"+f.Name] {
			return fmt.Errorf("fault %q appears twice", f.Name)
		}
		seen["f"+f.Name] = true
	}
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			var na *NotApplicableError
			if _, err := f.On(p.Backend(c)); err != nil && !errors.As(err, &na) {
				return fmt.Errorf("%s.%s: %w", c.Name, f.Name, err)
			}
		}
	}
	if len(p.Cells()) == 0 {
		return fmt.Errorf("sweep: every pair of the matrix is n/a (%d configurations × %d faults)", len(p.Configs), len(p.Faults))
	}
	for _, cell := range p.Cells() {
		if _, err := p.RunConfig(cell, 0, "/nonexistent"); err != nil {
			return fmt.Errorf("%s: %w", cell.ID(), err)
		}
	}
	return nil
}

// RewritePlan replaces plan.json of a sweep being resumed (only --parallel
// and the adaptive trial counts may change).
func RewritePlan(dir string, p Plan) error { return writePlan(filepath.Join(dir, PlanFile), p) }
