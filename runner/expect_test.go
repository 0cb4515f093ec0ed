package runner

import (
	"slices"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// The anti-patterns' expectations follow from their catalog entries' flaws
// (lock.Recipe.LeavesNoTTL, Unchecked), not from their names: the
// predicates a run of each is held to.
func TestRecipeFlawsDecideTheExpectation(t *testing.T) {
	for _, tt := range []struct {
		scenario, recipe string
		want             scenario.Predicate
	}{
		{"stuck-lock", "setnx-expire", scenario.StuckLock(true)},
		{"stuck-lock", "extend-no-px", scenario.StuckLock(true)},
		{"stuck-lock", "native", scenario.StuckLock(false)},
		{"paused-client", "unsafe", scenario.LockIs(checker.Invalid)},
		{"paused-client", "native", scenario.LockIs(checker.Valid)},
	} {
		t.Run(tt.scenario+"/"+tt.recipe, func(t *testing.T) {
			sc, err := scenario.Get(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cfg := FromScenario(sc)
			cfg.Recipe = tt.recipe
			var texts []string
			for _, p := range Expected(cfg) {
				texts = append(texts, p.Text)
			}
			if !slices.Contains(texts, tt.want.Text) {
				t.Errorf("expected %q among %q", tt.want.Text, texts)
			}
		})
	}
}
