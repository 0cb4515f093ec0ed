package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// A fault over a target is, on each deployment that has the target, exactly
// one of its entries; the run injects that entry and says so in its config.
func TestFaultsOverTargets(t *testing.T) {
	for _, tt := range []struct {
		fault, topology string
		faultsAt        bool
		want            string // the entry it runs, or the text of the refusal
	}{
		{"kill-leader", "", false, "kill-primary"},
		{"kill-leader", "sentinel", false, "kill-primary"},
		{"kill-leader", "cluster", false, "cluster-kill-primary"},
		{"kill-leader", "etcd", false, "etcd-kill-leader"},
		{"kill-leader", "zookeeper", true, "zk-kill-leader"},
		{"pause-leader", "etcd", false, "etcd-pause-leader"},
		{"pause-leader", "sentinel", true, "pause-primary"},
		{"pause-leader", "postgres", false, "pg-promote"},
		{"kill-one", "redlock", false, "kill-node"},
		{"pause-one", "redlock", false, "pause-node"},
		{"clock-bump-leader", "standalone", false, "clock-bump"},
		// An entry's own name is itself, on every deployment that has it.
		{"etcd-kill-leader", "etcd", false, "etcd-kill-leader"},
		{"pause-node", "redlock", true, "pause-node"},
		// No leader on Redlock: the refusal names where the fault is and
		// what this deployment offers instead.
		{"kill-leader", "redlock", false, "kill-one (kill-node)"},
		{"kill-one", "etcd", false, "kill-node on redlock"},
		// The entry found, its own needs still apply: libfaketime cannot
		// move etcd's clock, a partition needs containers.
		{"clock-bump-leader", "etcd", false, "refused on --topology etcd"},
		{"partition-leader", "zookeeper", false, "--runtime docker"},
		{"kill-everything", "etcd", false, "unknown fault"},
	} {
		name := tt.fault + " on " + tt.topology
		sc, _ := scenario.Get("failover-race")
		cfg := FromScenario(sc)
		cfg.Cluster.Topology = tt.topology
		d, _ := cluster.Lookup(tt.topology)
		d.Defaults(&cfg.Cluster, func(string) bool { return false })
		if r, ok := recipeOn[tt.topology]; ok {
			cfg.Recipe, cfg.Fence = r, "none"
		}
		if tt.faultsAt {
			cfg.FaultsAt = []nemesis.Step{{At: 3 * time.Second, Fault: tt.fault}}
		} else {
			cfg.Faults = []string{tt.fault}
		}
		err := cfg.Validate()
		if _, known := knownEntry(tt.want); !known {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: got %v, want an error naming %q", name, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
			continue
		}
		if len(cfg.Faults) != 1 || cfg.Faults[0] != tt.want {
			t.Errorf("%s: runs %v, want %s", name, cfg.Faults, tt.want)
		}
		if tt.faultsAt && (len(cfg.Schedule) != 1 || cfg.Schedule[0].Fault != tt.want) {
			t.Errorf("%s: schedule %+v, want one step of %s", name, cfg.Schedule, tt.want)
		}
	}
}

// recipeOn is a recipe each deployment without Valkey's runs.
var recipeOn = map[string]string{"etcd": "etcd-mutex", "zookeeper": "zk-lock", "redlock": "redlock", "postgres": "pg-advisory"}

func knownEntry(name string) (*nemesis.Fault, bool) {
	f, err := nemesis.Lookup(name)
	return f, err == nil
}

// Every target names a mechanism some deployment has, every entry's As is
// a target, and no deployment has two entries for one target (the run could
// not say which it injects).
func TestTargetsAreOneEntryEach(t *testing.T) {
	// A target and its entry named together are one fault.
	sc, _ := scenario.Get("failover-race")
	cfg := FromScenario(sc)
	cfg.Faults = []string{"kill-leader", "cut-replication", "kill-primary"}
	if err := cfg.Validate(); err != nil || len(cfg.Faults) != 2 || cfg.Faults[0] != "kill-primary" {
		t.Errorf("kill-leader,cut-replication,kill-primary on sentinel: %v, %v; want kill-primary, cut-replication", cfg.Faults, err)
	}
	for _, target := range nemesis.Targets {
		on := 0
		for _, topo := range cluster.Topologies {
			var entries []string
			for _, n := range nemesis.Names() {
				f, _ := nemesis.Lookup(n)
				if f.As == target.Name && strings.Contains(" "+strings.Join(nemesis.Offered(f), " ")+" ", " "+topo+" ") {
					entries = append(entries, n)
				}
			}
			if len(entries) > 1 {
				t.Errorf("%s on %s is %v: one entry each", target.Name, topo, entries)
			}
			r, err := nemesis.Resolve(target.Name, topo)
			switch {
			case len(entries) == 1 && (err != nil || r != entries[0]):
				t.Errorf("%s on %s resolves to %q, %v; want %s", target.Name, topo, r, err, entries[0])
			case len(entries) == 0 && !errors.As(err, new(*nemesis.NoTargetError)):
				t.Errorf("%s on %s: %q, %v; want a NoTargetError", target.Name, topo, r, err)
			}
			on += len(entries)
		}
		if on == 0 {
			t.Errorf("%s is no deployment's", target.Name)
		}
	}
	for _, n := range nemesis.Names() {
		if f, _ := nemesis.Lookup(n); f.As != "" && nemesis.Known(f.As) != nil {
			t.Errorf("%s answers to %q, which is no target", n, f.As)
		}
	}
}
