package checker

import (
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// testMarks is the vocabulary the tests read their histories with, as a run
// hands its own over: every fault's marks (nemesis.Catalog), and the mark of
// a fault that ends a session, as a deployment declares one (revoke_test.go).
var testMarks = marks.NewCatalog(append(nemesis.Catalog().All(),
	marks.Mark{Event: "test-end-session", Heal: "test-session-gone", Cause: "session-ended", Revokes: true}), nil)
