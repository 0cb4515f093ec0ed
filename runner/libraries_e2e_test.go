package runner

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// TestLibrariesUnderAFailover runs each third-party lock library, driven
// unchanged, through the failover race once (seed 1) and asserts its
// headline: none of them can see the lost grant, so each is granted twice.
// Measured first over seeds 1-10 with `lockjepsen bench scenario --scenario
// failover-race --recipe R --fence none --seeds 10`: the scenario's whole
// lesson (lock and resource invalid) 10 of 10 for redislock and redsync (one
// pool). valkeylock's lock is invalid 10 of 10 but its resource only 9 of 10
// (2026-12-03; 7 of 10 a round before): the library watches its key
// (client-side caching) and cancels the holder's context when the new
// grant's SET invalidates it, so the two holders overlap for about a
// millisecond and whether both write in it is timing. For valkeylock the
// test asserts what holds on every seed; a fresh-clone CI run, three tests
// side by side, drew the resource-valid case on seed 1.
func TestLibrariesUnderAFailover(t *testing.T) {
	t.Parallel()
	for _, recipe := range []string{"redislock", "redsync", "valkeylock"} {
		t.Run(recipe, func(t *testing.T) {
			testslot.Parallel(t)
			cfg := config(t, "failover-race", func(c *Config) { c.Recipe, c.Fence = recipe, "none" })
			if recipe != "valkeylock" {
				r := expectLesson(t, cfg, 1)
				if r.Lock.Valid != checker.Invalid {
					t.Fatalf("lock %v, want invalid", r.Lock.Valid)
				}
				return
			}
			o, r := runAndLoad(t, cfg)
			if ok, saw := scenario.Holds([]scenario.Predicate{scenario.LockIs(checker.Invalid), scenario.DoubleGrantBy("failover")}, r); !ok {
				t.Fatalf("valkeylock was not granted twice by the failover: %v\n%s\n%s", saw, o.Summary, faultStory(cfg.Out))
			}
			if o.ExitCode != 1 {
				t.Fatalf("exit %d, want 1\n%s", o.ExitCode, o.Summary)
			}
			assertNoProcessesLeft(t, cfg.Out)
		})
	}
}
