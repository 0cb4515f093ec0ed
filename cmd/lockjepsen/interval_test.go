package main

import (
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/scenario"
)

// --faults on a scenario with no faults of its own runs them at
// scenario.DefaultFaultInterval rather than refusing an --interval 0s the user never
// typed; an --interval the user typed is kept, and one of 0 is still refused.
func TestFaultsOnAScenarioWithoutFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
		want time.Duration
	}{
		{"default gap", []string{"--scenario", "baseline", "--faults", "net-latency", "--net-proxy"}, true, scenario.DefaultFaultInterval},
		{"the user's gap", []string{"--scenario", "baseline", "--faults", "kill-primary", "--interval", "7s"}, true, 7 * time.Second},
		{"the scenario's own gap", []string{"--scenario", "failover-race", "--faults", "kill-primary"}, true, 0},
		{"no faults, no gap", []string{"--scenario", "baseline"}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, code, ok := runFlags("run", append(tc.args, "--out", t.TempDir()), nil)
			if ok != tc.ok {
				t.Fatalf("ok %v (exit %d), want %v", ok, code, tc.ok)
			}
			if tc.want != 0 && cfg.Interval != tc.want {
				t.Fatalf("interval %v, want %v", cfg.Interval, tc.want)
			}
			if tc.want == 0 && tc.name == "no faults, no gap" && cfg.Interval != 0 {
				t.Fatalf("interval %v for a run with no faults", cfg.Interval)
			}
		})
	}
}
