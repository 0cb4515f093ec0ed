package runner

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// scriptedPrimary is a runtime whose Primary is whatever the test set last;
// watchPrimary calls nothing else.
type scriptedPrimary struct {
	cluster.Runtime
	mu      sync.Mutex
	primary string
	roles   map[string]string // what ROLE answers, by node
}

func (s *scriptedPrimary) set(p string) { s.mu.Lock(); s.primary = p; s.mu.Unlock() }
func (s *scriptedPrimary) setRole(node, role string) {
	s.mu.Lock()
	s.roles[node] = role
	s.mu.Unlock()
}
func (s *scriptedPrimary) Primary(context.Context) (cluster.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cluster.Node{Name: s.primary, Kind: cluster.RolePrimary}, nil
}
func (s *scriptedPrimary) Command(_ context.Context, node string, args ...string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roles[node] + "\n0", nil
}

// A failover during a step of a fault that logs none (a network fault:
// Sentinel failing over a primary whose links it keeps dropping) is logged
// by watchPrimary, with the old primary's stale window while it still
// answers ROLE as master; one during a failover fault's step is that step's
// to log.
func TestWatchPrimaryLogsFailoversNoFaultStepLogs(t *testing.T) {
	for _, tt := range []struct {
		fault     string
		oldServes bool // the old primary answers master after the promotion, then is demoted
		// unknown: no primary is known from the promotion until after the
		// step ended (no majority of Sentinels agreed in time); the step
		// still owns the failover it drove.
		unknown bool
		want    []string
	}{
		{"net-timeout", true, false, []string{history.NFailover, history.NStalePrimary, history.NStalePrimaryDemoted}},
		{"pause-client", false, false, []string{history.NFailover}},
		{"kill-primary", true, false, nil},
		{"cut-replication", false, false, nil},
		{"cut-replication", false, true, nil},
		// A slot moved to another shard: the lock's primary changes on
		// purpose, and the old one stays a primary of its own shard.
		{"migrate-slot", true, false, nil},
	} {
		name := tt.fault
		if tt.unknown {
			name += "/primary-unknown-at-its-end"
		}
		t.Run(name, func(t *testing.T) {
			f, err := nemesis.Lookup(tt.fault)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			rt := &scriptedPrimary{primary: "valkey-0", roles: map[string]string{"valkey-0": "master", "valkey-1": "slave"}}
			r := &run{cluster: rt, track: newTracker(time.Second)}
			if r.hist, err = history.Create(filepath.Join(dir, "history.jsonl")); err != nil {
				t.Fatal(err)
			}
			if r.nem, err = history.Create(filepath.Join(dir, "nemesis.jsonl")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { r.watchPrimary(ctx); close(done) }()
			time.Sleep(400 * time.Millisecond) // the watcher's first look

			// The step as runStep marks it, with the primary changing midway.
			ended := r.markStep(nemesis.Step{Fault: tt.fault})
			time.Sleep(300 * time.Millisecond)
			if !tt.oldServes {
				rt.setRole("valkey-0", "slave")
			}
			rt.setRole("valkey-1", "master")
			if tt.unknown {
				rt.set("")
			} else {
				rt.set("valkey-1")
			}
			time.Sleep(600 * time.Millisecond)
			ended()
			time.Sleep(600 * time.Millisecond)
			if tt.unknown {
				rt.set("valkey-1")
				time.Sleep(600 * time.Millisecond)
			}
			rt.setRole("valkey-0", "slave") // Sentinel demotes it
			time.Sleep(600 * time.Millisecond)
			cancel()
			<-done
			if err := r.nem.Close(); err != nil {
				t.Fatal(err)
			}
			evs, err := history.ReadFile(filepath.Join(dir, "nemesis.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.F)
				switch e.F {
				case history.NFailover:
					if e.Node != "valkey-1" || !strings.Contains(e.Detail, "valkey-0 was") {
						t.Errorf("failover event %+v: want valkey-1 named, valkey-0 as the old primary", e)
					}
				case history.NStalePrimary, history.NStalePrimaryDemoted:
					if e.Node != "valkey-0" {
						t.Errorf("%s names %s, want the old primary valkey-0", e.F, e.Node)
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("during a %s step (Failover %v) watchPrimary logged %v, want %v", tt.fault, f.Failover, got, tt.want)
			}
		})
	}
}
