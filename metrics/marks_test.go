package metrics

// The fault catalog registers the history's fault marks (package marks) for
// the tests, as the lockjepsen binary does by linking the nemesis.
import _ "github.com/lockjepsen/lockjepsen/nemesis"
