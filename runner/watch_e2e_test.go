package runner

import (
	"context"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// A failover no fault step drove (here an operator's SENTINEL FAILOVER in the
// middle of a fault-free run) is logged as a failover observation, so the
// checker can blame what happens around it on it rather than on nothing.
func TestFailoverNobodyDroveIsLogged(t *testing.T) {
	testslot.Parallel(t)
	cfg := config(t, "baseline", func(c *Config) { c.TimeLimit = 14 * time.Second; c.Clients = 4 })
	done := make(chan Outcome, 1)
	go func() { done <- Run(context.Background(), cfg, testLog{t}) }()

	// Once the workload runs, ask one Sentinel for a failover by hand.
	state := filepath.Join(cfg.Out, "cluster", cluster.StateFile)
	deadline := time.Now().Add(20 * time.Second)
	var l *cluster.Local
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(cfg.Out, "history.jsonl")); err == nil && strings.Count(string(b), "\n") > 200 {
			bins, err := cluster.FindBinaries()
			if err != nil {
				t.Fatal(err)
			}
			if l, err = cluster.LoadLocal(filepath.Dir(state), bins); err == nil {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if l == nil {
		t.Fatal("the run's cluster never became visible")
	}
	var sentinel string
	for _, n := range l.Nodes() {
		if n.Watches() {
			sentinel = n.Name
			break
		}
	}
	if _, err := l.Command(context.Background(), sentinel, "SENTINEL", "FAILOVER", cluster.MasterName); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	o := <-done
	if !o.Checked {
		t.Fatalf("run not checked: %v", o.Err)
	}
	events, err := history.ReadFile(filepath.Join(cfg.Out, "nemesis.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events {
		found = found || (e.F == history.NFailover && strings.Contains(e.Detail, "did not drive"))
	}
	if !found {
		t.Fatalf("the hand-made failover was not logged; nemesis events: %+v", events)
	}
}
