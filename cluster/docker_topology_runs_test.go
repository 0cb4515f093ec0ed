package cluster_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/deployments/etcd"
	"github.com/lockjepsen/lockjepsen/deployments/zookeeper"
	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
	"github.com/moby/moby/client"
)

// The partition scenarios of the redlock and etcd topologies, end to end on
// the docker runtime, as a user types them: each run is held to its
// scenario's own expectation (deployments/redlock/scenarios.go, deployments/etcd/scenarios.go), and its
// nemesis.jsonl must show every partition with its heal.

// loadRun reads a run folder's config and verdict.
func loadRun(t *testing.T, dir string) (runner.Config, *checker.Result) {
	t.Helper()
	var cfg runner.Config
	var r checker.Result
	for name, v := range map[string]any{"config.json": &cfg, "results.json": &r} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return cfg, &r
}

// windows pairs each fault event of nemesis.jsonl with its heal on the same
// node; an unhealed one has end 0.
func windows(t *testing.T, dir, event, heal string) (ws [][2]int64, nem []history.Event) {
	t.Helper()
	nem, err := history.ReadFile(filepath.Join(dir, "nemesis.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int{}
	for _, e := range nem {
		switch e.F {
		case event:
			open[e.Node] = len(ws)
			ws = append(ws, [2]int64{e.Time, 0})
		case heal:
			if i, ok := open[e.Node]; ok {
				ws[i][1] = e.Time
				delete(open, e.Node)
			}
		}
	}
	return ws, nem
}

// runValidOnDocker runs a scenario on the docker runtime (seed 1, with
// extra flags if any) and requires a valid verdict, its lesson, and no
// container or network left behind; it returns the run's config.
func runValidOnDocker(t *testing.T, exe string, api *client.Client, name, dir string, extra ...string) runner.Config {
	t.Helper()
	start := time.Now()
	args := append([]string{"run", "--runtime", "docker", "--scenario", name, "--seed", "1", "--out", dir}, extra...)
	code, text, pid := lj(t, exe, args...)
	t.Logf("%s on docker: exit %d in %v", name, code, time.Since(start).Round(time.Second))
	if c, n := leftovers(t, api, pid); c != 0 || n != 0 {
		t.Errorf("left %d containers and %d networks behind", c, n)
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0 (valid):\n%s", code, tail(text))
	}
	cfg, r := loadRun(t, dir)
	if ok, saw := scenario.Holds(runner.Expected(cfg), r); !ok {
		t.Fatalf("the run did not show the lesson: %v", saw)
	}
	return cfg
}

func TestDockerTopologyRuns(t *testing.T) {
	t.Parallel()
	if _, err := etcd.FindEtcd(); err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	api := dockerAPI(t)
	exe := buildAll(t)
	out := t.TempDir()

	// Both are refused on the local runtime before anything starts.
	for _, name := range []string{"redlock-partition-minority", "etcd-partition-member"} {
		code, text, _ := lj(t, exe, "run", "--scenario", name, "--runtime", "local", "--out", filepath.Join(out, "refused-"+name))
		if code != exitcode.BadInput || !strings.Contains(text, "--runtime docker") {
			t.Errorf("%s on the local runtime: exit %d, %q; want exit 254 naming --runtime docker", name, code, text)
		}
	}

	t.Run("redlock-partition-minority", func(t *testing.T) {
		t.Parallel()
		cluster.HoldDockerRun(t)
		dir := filepath.Join(out, "redlock")
		cfg := runValidOnDocker(t, exe, api, "redlock-partition-minority", dir)
		// Every step cut off a minority (2 of 5 nodes) and healed each; the
		// majority granted the lock inside every window.
		ws, _ := windows(t, dir, "isolate-node", "heal-isolate-node")
		if len(ws) == 0 || len(ws)%2 != 0 || len(ws) != 2*len(cfg.Schedule) {
			t.Fatalf("%d isolate-node events for %d steps; want 2 per step (a minority of 5)", len(ws), len(cfg.Schedule))
		}
		events, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range ws {
			if w[1] == 0 {
				t.Fatalf("isolation %d was never healed", i)
			}
			grants := 0
			for _, e := range events {
				if e.F == history.FAcquire && e.Type == history.OK && e.Time >= w[0] && e.Time <= w[1] {
					grants++
				}
			}
			if grants == 0 {
				t.Errorf("no grant while isolation %d (%.1f s) was in force", i, float64(w[1]-w[0])/1e9)
			}
		}
	})

	t.Run("etcd-partition-member", func(t *testing.T) {
		t.Parallel()
		cluster.HoldDockerRun(t)
		dir := filepath.Join(out, "etcd")
		cfg := runValidOnDocker(t, exe, api, "etcd-partition-member", dir)
		// Every step partitioned the leader, healed it, and the majority
		// elected another leader meanwhile.
		ws, nem := windows(t, dir, "partition", "heal-partition")
		if len(ws) != len(cfg.Schedule) || len(ws) == 0 {
			t.Fatalf("%d partition events for %d steps", len(ws), len(cfg.Schedule))
		}
		for i, w := range ws {
			if w[1] == 0 {
				t.Fatalf("partition %d was never healed", i)
			}
		}
		failovers := 0
		for _, e := range nem {
			if e.F == history.NFailover {
				failovers++
			}
		}
		if failovers == 0 {
			t.Errorf("%d leader changes logged for %d partitions of the leader", failovers, len(ws))
		}
		if _, err := os.Stat(filepath.Join(dir, "logs", "etcd-0.log")); err != nil {
			t.Errorf("run folder lacks the members' logs: %v", err)
		}
	})
}

// TestDockerZooKeeperRuns: zk-lock on ZooKeeper members in containers, as a
// user types it: its baseline, and the leader cut off from the other
// members and from the clients for longer than a session
// (zk-partition-leader), each held to its scenario's expectation.
func TestDockerZooKeeperRuns(t *testing.T) {
	t.Parallel()
	if _, _, err := zookeeper.FindZooKeeper(); err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	api := dockerAPI(t)
	exe := buildAll(t)
	out := t.TempDir()

	code, text, _ := lj(t, exe, "run", "--scenario", "zk-partition-leader", "--runtime", "local", "--out", filepath.Join(out, "refused"))
	if code != exitcode.BadInput || !strings.Contains(text, "--runtime docker") {
		t.Errorf("zk-partition-leader on the local runtime: exit %d, %q; want exit 254 naming --runtime docker", code, text)
	}

	t.Run("baseline", func(t *testing.T) {
		t.Parallel()
		cluster.HoldDockerRun(t)
		runValidOnDocker(t, exe, api, "baseline", filepath.Join(out, "baseline"), "--topology", "zookeeper", "--recipe", "zk-lock")
	})

	t.Run("zk-partition-leader", func(t *testing.T) {
		t.Parallel()
		cluster.HoldDockerRun(t)
		dir := filepath.Join(out, "partition")
		cfg := runValidOnDocker(t, exe, api, "zk-partition-leader", dir)
		// The leader was cut off and healed, and the majority elected
		// another meanwhile. Asked of at least one step, not of every one:
		// seed 1 had 2 of 2, but over seeds 1-10 at a load average of 20-27,
		// 1 of 12 isolations saw no new leader within 5 s of its planned
		// end, and a 13th step found no leader to cut. What the lesson needs
		// is a partitioned leader; the verdict above is asserted either way.
		ws, nem := windows(t, dir, "isolate-leader", "heal-isolate-leader")
		if len(ws) == 0 || len(ws) > len(cfg.Schedule) {
			t.Fatalf("%d isolate-leader events for %d steps", len(ws), len(cfg.Schedule))
		}
		for i, w := range ws {
			if w[1] == 0 {
				t.Fatalf("isolation %d was never healed", i)
			}
		}
		failovers := 0
		for _, e := range nem {
			if e.F == history.NFailover {
				failovers++
			}
		}
		if failovers == 0 {
			t.Errorf("%d leader changes logged for %d isolations of the leader", failovers, len(ws))
		}
		if _, err := os.Stat(filepath.Join(dir, "logs", "zk-0.log")); err != nil {
			t.Errorf("run folder lacks the members' logs: %v", err)
		}
	})
}
