package runner

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// The ZooKeeper backend end to end: three real ZooKeeper members (Debian's
// package on the JRE), real client processes running the documentation's
// lock recipe through go-zookeeper/zk, the real resource. Each expectation
// is the scenario's own (scenario/zookeeper.go).

func TestZKLeaderFaults(t *testing.T) {
	for _, name := range []string{"zk-kill-leader", "zk-pause-leader"} {
		t.Run(name, func(t *testing.T) {
			cfg := config(t, name, nil)
			r := expectMemberLesson(t, cfg, "zk-0.log")
			// The fault fires every 6 s of a 25 s run: at least two elections.
			assertFencedFailovers(t, cfg, r, history.FenceZxid, 2)
		})
	}
}

func TestZKPausedClient(t *testing.T) {
	expectMemberLesson(t, config(t, "zk-paused-client", nil), "zk-0.log")
}
