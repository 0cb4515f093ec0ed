package shrink

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/internal/checkertest"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// The targets, as benchmarks (a timed test would fail on a loaded
// machine): a real failover-race run's first double grant shrinks to at
// most 12 operations in under 10 s, and a 1M-event generated history with
// one injected fault in under 60 s. Each times what `lockjepsen shrink`
// does: read the folder, check it once, shrink; and reports the sizes.
//
//	bin/lockjepsen run --scenario failover-race --seed 1 --out /tmp/fr1
//	LOCKJEPSEN_SHRINK_RUN=/tmp/fr1 go test ./shrink -run XXX -bench RealRun -benchtime 1x
//	go test ./shrink -run XXX -bench 1M -benchtime 1x
//	LOCKJEPSEN_SHRINK_1M=/tmp/shrink1m go test ./shrink -run XXX -bench 1M -benchtime 1x

func BenchmarkShrinkRealRun(b *testing.B) {
	dir := os.Getenv("LOCKJEPSEN_SHRINK_RUN")
	if dir == "" {
		b.Skip("LOCKJEPSEN_SHRINK_RUN not set: give it a failing run folder, e.g. lockjepsen run --scenario failover-race --out /tmp/fr1")
	}
	res := benchShrink(b, dir)
	if res.Target.Kind == "double-grant" && res.After.Operations > 12 {
		b.Errorf("the double grant kept %d operations, want at most 12", res.After.Operations)
	}
}

// With LOCKJEPSEN_SHRINK_1M=DIR the generated run is written to DIR and kept
// (reused when DIR holds it), for `lockjepsen shrink DIR` by hand.
func BenchmarkShrink1M(b *testing.B) {
	dir := os.Getenv("LOCKJEPSEN_SHRINK_1M")
	if dir == "" {
		dir = b.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, runfolder.History)); err != nil {
		events, attempts, sim := checkertest.Simulate(checkertest.Config{Seed: 42, Clients: 64, Keys: 16, Events: 1_000_000,
			TTLms: 500, PInfo: 0.01, PPause: 0.01, Inject: true})
		if !sim.Injected {
			b.Fatal("no double grant injected")
		}
		if err := checkertest.WriteRun(dir, events, attempts); err != nil {
			b.Fatal(err)
		}
	}
	res := benchShrink(b, dir)
	if res.Target.Kind != "double-grant" {
		b.Errorf("shrank a %s, want the injected double grant", res.Target.Kind)
	}
}

// benchShrink times LoadPart and Shrink of dir, as the command runs them,
// verifies the result outside the timer, and reports the sizes before and
// after.
func benchShrink(b *testing.B, dir string) *Result {
	var res *Result
	for i := 0; i < b.N; i++ {
		r, err := LoadPart(dir, Options{Check: checker.Options{Marks: testMarks}})
		if err != nil {
			b.Fatal(err)
		}
		opts, err := r.CheckOptions()
		if err != nil {
			b.Fatal(err)
		}
		opts.Marks = testMarks
		if res, err = Shrink(r, Options{Check: opts}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := res.Verify(r, opts); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(res.Before.Events), "events-before")
	b.ReportMetric(float64(res.After.Events), "events-after")
	b.ReportMetric(float64(res.After.Operations), "ops-after")
	b.ReportMetric(float64(len(res.Kept)), "units-after")
	b.ReportMetric(float64(res.Checks), "checks")
	b.Logf("%s: %v -> %v, %d units kept, shrink alone %v", res.Target, res.Before, res.After, len(res.Kept), res.Elapsed)
	return res
}
