package runner

import (
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
)

// The ZooKeeper backend end to end: three real ZooKeeper members (Debian's
// package on the JRE), real client processes running the documentation's
// lock recipe through go-zookeeper/zk, the real resource. Each expectation
// is the scenario's own (deployments/zookeeper/scenarios.go).

func TestZKLeaderFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ scenario, fault string }{
		{"zk-kill-leader", "kill"},
		{"zk-pause-leader", "pause-node"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			testslot.Parallel(t)
			cfg := config(t, tc.scenario, nil)
			r := expectMemberLesson(t, cfg, "zk-0.log")
			// One or two injections a run (10 seeds: 1 to 2), each a
			// leader change.
			events, err := history.ReadFile(filepath.Join(cfg.Out, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			injected := 0
			for _, e := range events {
				if e.Process == history.Nemesis && e.F == tc.fault {
					injected++
				}
			}
			if injected == 0 {
				t.Fatalf("no %s event in the history: the fault never fired", tc.fault)
			}
			assertFencedFailovers(t, cfg, r, lock.FenceZxid, injected)
		})
	}
}

func TestZKPausedClient(t *testing.T) {
	testslot.Parallel(t)
	expectMemberLesson(t, config(t, "zk-paused-client", nil), "zk-0.log")
}
