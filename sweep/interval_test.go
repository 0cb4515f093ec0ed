package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/scenario"
)

// A sweep's faults on a scenario with none of its own (baseline) run at
// scenario.DefaultFaultInterval, as run --faults does, rather than being
// refused for an --interval the user never typed; a fault entry's own
// interval and a fault scenario's gap are kept.
func TestFaultsOnAScenarioWithoutFaults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		interval time.Duration
		want     time.Duration
	}{
		{"default gap", "baseline", 0, scenario.DefaultFaultInterval},
		{"the entry's gap", "baseline", 7 * time.Second, 7 * time.Second},
		{"the scenario's own gap", "failover-race", 0, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Plan{Scenario: tc.scenario, Configs: []Config{{Name: "none"}},
				Faults: []Fault{{Name: "kill", Faults: []string{"kill-primary"}, Interval: Duration(tc.interval)}}}
			p.Defaults()
			if err := p.Validate(); err != nil {
				t.Fatalf("refused: %v", err)
			}
			cfg, err := p.RunConfig(p.Cells()[0], 0, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Interval != tc.want {
				t.Errorf("interval %v, want %v", cfg.Interval, tc.want)
			}
		})
	}
}

// Every numeric setting of a plan, typed as a flag or in a sweep file, is
// refused out of range, and the message names it both ways and only it: a
// rate the user typed alone is not reported beside a width they never gave.
func TestPlanSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Plan)
		says   string
		not    string
	}{
		{"negative trials", func(p *Plan) { p.Trials = -3 }, `--trials ("trials" in a sweep file) -3`, ""},
		{"parallel 0", func(p *Plan) { p.Parallel = 17 }, `--parallel ("parallel" in a sweep file) 17`, ""},
		{"negative workload", func(p *Plan) { p.TimeLimit = Duration(-5 * time.Second) }, `--time-limit ("time_limit" in a sweep file) -5s`, ""},
		{"negative minimum", func(p *Plan) { p.MinFailovers = -1 }, `--min-failovers ("min_failovers" in a sweep file) -1`, ""},
		{"negative cap", func(p *Plan) { p.MaxTrials = -1 }, `--max-trials ("max_trials" in a sweep file) -1`, ""},
		{"width out of range", func(p *Plan) { p.UntilCI = -0.2 }, `--until-ci ("until_ci" in a sweep file) -0.2`, "below"},
		{"rate out of range", func(p *Plan) { p.UntilCI, p.Below, p.MaxTrials = 0.2, 2, 40 }, `--below ("below" in a sweep file) 2`, "until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Plan{Scenario: "failover-race", Configs: []Config{{Name: "none"}},
				Faults: []Fault{{Name: "cut", Faults: []string{"cut-replication"}}}}
			p.Defaults()
			tc.change(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.says) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("%v, want a refusal naming %s (and not %q)", err, tc.says, tc.not)
			}
		})
	}
}
