package cluster_test

// The deployments live in folders of their own, which import this package;
// linking them here registers them in this test binary, so that the runtime
// tests (internal ones among them) start the default Sentinel deployment and
// the others by name, as a run does.
import (
	_ "github.com/lockjepsen/lockjepsen/deployments/sentinel"
)
