package checker_test

import (
	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/report"
)

// The checker returns facts and the report writes the sentences
// (report.Explain). The tests that read an explanation are the checker's,
// beside the histories that produce it; an internal test cannot import
// report (report imports checker), this external one can, and hands
// report.Explain to them before any test runs.
func init() {
	checker.ExplainForTest = func(r *checker.Result, cat *marks.Catalog) { report.Explain(r, cat) }
}
