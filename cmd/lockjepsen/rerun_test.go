package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/shrink"
)

// The faults a run injected are read from nemesis.jsonl: each schedule
// step by its fault's first mark at or after its offset, the offset that
// event's since the workload's start on the runner's tick; a step never
// fired ends the list; without a recorded start the first step's planned
// offset anchors the clock.
func TestInjectedFaults(t *testing.T) {
	const s0 = int64(1000 * time.Second)
	ev := func(f string, at time.Duration) history.Event { return history.Event{F: f, Time: s0 + int64(at)} }
	sched := []nemesis.Step{{At: 3 * time.Second, Fault: "cut-replication"}, {At: 12476 * time.Millisecond, Fault: "kill-primary"}, {At: 20 * time.Second, Fault: "cut-replication"}}
	nem := []history.Event{
		ev("cut-replication", 3007*time.Millisecond), ev("kill", 6300*time.Millisecond), ev("heal-replication", 6350*time.Millisecond),
		ev("failover", 8600*time.Millisecond), ev("restart", 8650*time.Millisecond),
		// kill-primary's first mark is kill: the cut's kill above is not it.
		ev("kill", 12503*time.Millisecond), ev("restart", 15*time.Second),
	}
	want := []shrink.Fault{{Name: "cut-replication", At: 3 * time.Second}, {Name: "kill-primary", At: 12500 * time.Millisecond}}
	for _, tt := range []struct {
		name  string
		start int64
	}{{"recorded start", s0}, {"no recorded start", 0}} {
		got, err := injectedFaults(runner.Config{Schedule: sched, WorkloadStart: tt.start}, nem)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, want)
		}
	}
	if got, _ := injectedFaults(runner.Config{Schedule: sched, WorkloadStart: s0}, nil); len(got) != 0 {
		t.Errorf("no fault events, yet %v injected", got)
	}
}

func TestReproCommand(t *testing.T) {
	s := shrink.Schedule{Faults: []shrink.Fault{{Name: "cut-replication", At: 3 * time.Second}}, TimeLimit: 11 * time.Second}
	cfg := runner.Config{Scenario: "failover-race", Command: []string{"lockjepsen", "run", "--scenario", "failover-race", "--fence", "none", "--seed", "2", "--time-limit=25s", "--faults", "cut-replication", "--out", "/tmp/x"}}
	got := strings.Join(reproCommand(cfg, s, 4), " ")
	if want := "lockjepsen run --scenario failover-race --fence none --seed 4 --time-limit 11s --faults-at 3s:cut-replication"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	cfg.Command = nil
	if got := strings.Join(reproCommand(cfg, s, 1), " "); !strings.HasPrefix(got, "lockjepsen run --scenario failover-race --seed 1") {
		t.Errorf("a run started from code: %s", got)
	}
}
