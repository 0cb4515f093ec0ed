package runner

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
)

// TestLibrariesUnderAFailover runs each third-party lock library, driven
// unchanged, through the failover race once (seed 1) and asserts its
// headline: none of them can see the lost grant, so each is granted twice
// (the scenario's expectation for an unfenced recipe). Measured first over
// seeds 1-10 with `lockjepsen bench scenario --scenario failover-race
// --recipe R --fence none --seeds 10`: the lock invalid 10 of 10 for
// redislock, redsync (one pool) and valkeylock (whose resource stayed valid
// in 3 of the 10: the double holders did not both write).
func TestLibrariesUnderAFailover(t *testing.T) {
	for _, recipe := range []string{"redislock", "redsync", "valkeylock"} {
		t.Run(recipe, func(t *testing.T) {
			cfg := config(t, "failover-race", func(c *Config) { c.Recipe, c.Fence = recipe, "none" })
			r := expectLesson(t, cfg, 1)
			if r.Lock.Valid != checker.Invalid {
				t.Fatalf("lock %v, want invalid", r.Lock.Valid)
			}
		})
	}
}
