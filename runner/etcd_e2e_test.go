package runner

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/deployments/etcd"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// The etcd backend end to end: three real etcd members, real client
// processes using the official client's concurrency.Mutex, the real
// resource. Each expectation is the scenario's own (deployments/etcd/scenarios.go).

// expectMemberLesson runs cfg and holds it to its scenario's expectation, as
// expectLesson does for the Valkey topologies (whose run folders have a
// logs/valkey-0.log; these have the first member's log: logs/etcd-0.log,
// logs/zk-0.log).
func expectMemberLesson(t *testing.T, cfg Config, firstLog string) *checker.Result {
	t.Helper()
	o := Run(context.Background(), cfg, testLog{t})
	if !o.Checked {
		t.Fatalf("run not checked: %v", o.Err)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r checker.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"history.jsonl", "nemesis.jsonl", "resource.jsonl", "summary.txt", "index.html", "logs/" + firstLog} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Errorf("run folder lacks %s", f)
		}
	}
	if ok, saw := scenario.Holds(Expected(cfg), &r); !ok {
		t.Fatalf("the run did not show the %s lesson: %v\n%s", cfg.Scenario, saw, o.Summary)
	}
	if o.ExitCode != 0 {
		t.Fatalf("exit %d, want 0\n%s", o.ExitCode, o.Summary)
	}
	assertNoProcessesLeft(t, cfg.Out)
	return &r
}

func TestEtcdLeaderFailover(t *testing.T) {
	testslot.Parallel(t)
	cfg := config(t, "etcd-leader-failover", nil)
	r := expectMemberLesson(t, cfg, "etcd-0.log")
	assertFencedFailovers(t, cfg, r, lock.FenceEtcdRevision, 2)
}

// assertFencedFailovers holds a leader-failover run to its point: a leader
// change logged per fault, and every grant fenced by the service's own
// number, enough of them to say the order held across the elections.
func assertFencedFailovers(t *testing.T, cfg Config, r *checker.Result, source string, want int) {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	failovers, fenced := 0, 0
	for _, e := range events {
		if e.F == history.NFailover {
			failovers++
		}
		if e.F == history.FAcquire && e.Type == history.OK && e.Fence > 0 && e.FenceSource == source {
			fenced++
		}
	}
	if failovers < want {
		t.Fatalf("%d leader changes logged, want one per fault (%d)", failovers, want)
	}
	if r.Ops["acquire"] == nil || fenced < 10 || fenced != r.Ops["acquire"].OK {
		t.Fatalf("%d grants carry a %s fence, of %+v: too few to say the order held", fenced, source, r.Ops["acquire"])
	}
}

func TestEtcdPausedClient(t *testing.T) {
	testslot.Parallel(t)
	expectMemberLesson(t, config(t, "etcd-paused-client", nil), "etcd-0.log")
}

// The clock bump is refused before anything starts, naming why: a Go
// program's clock is out of libfaketime's reach (deployments/etcd's TestEtcdIgnoresFaketime
// keeps the finding honest).
func TestEtcdClockBumpRefused(t *testing.T) {
	testslot.Parallel(t)
	sc, err := scenario.Get("etcd-clock-bump")
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromScenario(sc)
	cfg.Out = filepath.Join(t.TempDir(), "run")
	if err := cfg.Validate(); !errors.Is(err, etcd.ErrClock) {
		t.Fatalf("Validate = %v, want the documented refusal", err)
	}
}
