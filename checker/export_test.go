package checker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/checkertest"
	"github.com/lockjepsen/lockjepsen/marks"
)

// TestWriteSampleRuns writes simulated runs for trying `lockjepsen check` by
// hand: LOCKJEPSEN_SAMPLES=/tmp/samples go test ./checker -run SampleRuns.
// With LOCKJEPSEN_SAMPLES_EVENTS=N it writes only "scale", a clean history of
// about N events from 64 clients with 40-hex tokens, and "scale-shrink", the
// same with one double grant injected (scripts/check-scale.sh).
func TestWriteSampleRuns(t *testing.T) {
	out := os.Getenv("LOCKJEPSEN_SAMPLES")
	if out == "" {
		t.Skip("LOCKJEPSEN_SAMPLES not set")
	}
	samples := map[string]simConfig{
		"clean": {Seed: 1, Clients: 8, Keys: 2, Events: 20000, TTLms: 200, PInfo: 0.01, PPause: 0.02},
		"fault": {Seed: 5, Clients: 16, Keys: 4, Events: 1 << 30, Until: 20e9, TTLms: 1000, PInfo: 0.0003,
			PPause: 0.002, Failovers: 2, FailEvery: 7e9},
	}
	if n, err := strconv.Atoi(os.Getenv("LOCKJEPSEN_SAMPLES_EVENTS")); err == nil && n > 0 {
		inject := scaleConfig(n)
		inject.Inject = true
		samples = map[string]simConfig{"scale": scaleConfig(n), "scale-shrink": inject}
	}
	for name, cfg := range samples {
		if name == "clean" && os.Getenv("LOCKJEPSEN_SAMPLES_BIG") != "" {
			cfg = simConfig{Seed: 42, Clients: 16, Keys: 4, Events: 1_000_000, TTLms: 500, PInfo: 0.01, PPause: 0.01}
		}
		if err := writeSample(filepath.Join(out, name), cfg, cfg.Clients == 64); err != nil {
			t.Fatal(err)
		}
	}
}

// scaleConfig is scripts/check-scale.sh's history: 64 clients, 16 keys, 1%
// unknown outcomes, about n events.
func scaleConfig(n int) simConfig {
	return simConfig{Seed: 42, Clients: 64, Keys: 16, Events: n, TTLms: 500, PInfo: 0.01, PPause: 0.01}
}

// writeSample writes a simulated run's history.jsonl and resource.jsonl to
// dir; hexTokens makes the tokens look like real ones (20 random bytes in hex).
func writeSample(dir string, cfg simConfig, hexTokens bool) error {
	events, attempts, _ := simulate(cfg)
	if hexTokens {
		for i := range events {
			if events[i].Token != "" {
				events[i].Token = fmt.Sprintf("%040x", events[i].Token)
			}
		}
		for i := range attempts {
			attempts[i].Token = fmt.Sprintf("%040x", attempts[i].Token)
		}
	}
	return checkertest.WriteRun(dir, events, attempts)
}

// ExplainForTest is report.Explain, set by explain_test.go (package
// checker_test, which may import report); explained runs it on r.
var ExplainForTest func(*Result, *marks.Catalog)

// checkExplained is Check, then the report's explanations (ExplainForTest):
// for the tests that read an explanation.
func checkExplained(events []history.Event, attempts []history.Attempt, opts Options) (*Result, error) {
	r, err := Check(events, attempts, opts)
	if err == nil {
		ExplainForTest(r, opts.Marks)
	}
	return r, err
}
