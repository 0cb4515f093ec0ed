package runner

import (
	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Expected is what the run's scenario predicts for its knobs (the scenario
// entry holds the prediction; this only reads the knobs off the config).
func Expected(cfg Config) []scenario.Predicate {
	sc, err := scenario.Get(cfg.Scenario)
	if err != nil {
		return []scenario.Predicate{scenario.Decided()}
	}
	// A recipe the config's validation let through; an unknown one has no
	// flaws to predict from.
	rec, _ := lock.Lookup(cfg.Recipe)
	return sc.Expected(scenario.Knobs{Recipe: cfg.Recipe, Fenced: cfg.Fence != knob.FenceNone, FenceSource: cfg.FenceSource,
		Persistent:  (cfg.Cluster.AppendOnly && cfg.Cluster.AppendFsync == "always") || cfg.DelayedRestart > cfg.TTL,
		LeavesNoTTL: rec.LeavesNoTTL, Unchecked: rec.Unchecked})
}

// Reproduced reports whether a run showed what its scenario teaches. The
// end-to-end tests and `lockjepsen bench scenario` (the reproduction rate) use
// it; the measured claims in docs/ and results/ come from the same predicates.
func Reproduced(cfg Config, r *checker.Result) bool {
	ok, _ := scenario.Holds(Expected(cfg), r)
	return ok
}

// Unmet lists the predicates of the run's scenario that did not hold, each
// with what the run showed instead: the line a failed end-to-end test prints
// first, so a CI log cut short still says which part of the lesson missed.
func Unmet(cfg Config, r *checker.Result) []string {
	var out []string
	for _, p := range Expected(cfg) {
		if saw, ok := p.Check(r); !ok {
			out = append(out, p.Text+": "+saw)
		}
	}
	return out
}
