package sweep

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/deployments/etcd"
	"github.com/lockjepsen/lockjepsen/deployments/redlock"
	"github.com/lockjepsen/lockjepsen/deployments/zookeeper"
	"github.com/lockjepsen/lockjepsen/knob"
)

func deploymentPlan(t *testing.T, configs, faults []string) Plan {
	t.Helper()
	p := Plan{Trials: 1, TimeLimit: Duration(30 * time.Second), BackToBack: true}
	for _, n := range configs {
		c, err := LookupConfig(n)
		if err != nil {
			t.Fatal(err)
		}
		p.Configs = append(p.Configs, c)
	}
	for _, n := range faults {
		f, err := LookupFault(n)
		if err != nil {
			t.Fatal(err)
		}
		p.Faults = append(p.Faults, f)
	}
	p.Defaults()
	return p
}

// TestDeploymentFaultMapping: each per-deployment fault kind runs the
// nemesis fault of the deployment's backend, through the same RunConfig a
// trial uses, and the pairs with no counterpart are n/a with a reason.
func TestDeploymentFaultMapping(t *testing.T) {
	all := []string{"sentinel-fence", "sentinel-dbfence", "redlock", "redlock-dbfence", "etcd", "zookeeper", "sql-lease"}
	p := deploymentPlan(t, all, DeploymentFaults)
	if err := p.Validate(); err != nil {
		t.Fatalf("the comparison's matrix must validate: %v", err)
	}
	want := []struct {
		config, fault string
		nemesis       string // "" : n/a
		backend       string
	}{
		{"sentinel-fence", "failover", "cut-replication", "sentinel"},
		{"sentinel-fence", "paused-client", "pause-client", "sentinel"},
		{"sentinel-fence", "clock-jump", "clock-bump", "sentinel"},
		{"sentinel-dbfence", "failover", "cut-replication", "sentinel"},
		{"sentinel-dbfence", "clock-jump", "clock-bump", "sentinel"},
		{"redlock", "failover", "crash-node", redlock.Topology},
		{"redlock", "paused-client", "pause-client", redlock.Topology},
		{"redlock", "clock-jump", "clock-bump-node", redlock.Topology},
		{"redlock-dbfence", "failover", "crash-node", redlock.Topology},
		{"etcd", "failover", "etcd-kill-leader", etcd.Topology},
		{"etcd", "paused-client", "pause-client", etcd.Topology},
		{"etcd", "clock-jump", "", etcd.Topology},
		{"zookeeper", "failover", "zk-kill-leader", zookeeper.Topology},
		{"zookeeper", "paused-client", "pause-client", zookeeper.Topology},
		{"zookeeper", "clock-jump", "", zookeeper.Topology},
		{"sql-lease", "failover", "restart-db", "sql-lease"},
		{"sql-lease", "paused-client", "pause-client", "sql-lease"},
		{"sql-lease", "clock-jump", "", "sql-lease"},
	}
	cells := map[string]Cell{}
	for _, c := range p.Cells() {
		cells[c.ID()] = c
	}
	na := map[string]NACell{}
	for _, n := range p.NotApplicable() {
		na[n.Config+"."+n.Fault] = n
	}
	if len(cells)+len(na) != len(all)*len(DeploymentFaults) {
		t.Errorf("%d cells + %d n/a, want %d pairs", len(cells), len(na), len(all)*len(DeploymentFaults))
	}
	for _, w := range want {
		id := w.config + "." + w.fault
		var cfgOf Config
		for _, c := range p.Configs {
			if c.Name == w.config {
				cfgOf = c
			}
		}
		if b := p.Backend(cfgOf); b != w.backend {
			t.Errorf("%s: backend %s, want %s", id, b, w.backend)
		}
		if w.nemesis == "" {
			if n, ok := na[id]; !ok || n.Reason == "" {
				t.Errorf("%s: want n/a with a reason, got cell %v / %+v", id, cells[id].Fault.Faults, n)
			}
			if _, ok := cells[id]; ok {
				t.Errorf("%s: an n/a pair must not be run", id)
			}
			continue
		}
		c, ok := cells[id]
		if !ok {
			t.Errorf("%s: no cell", id)
			continue
		}
		cfg, err := p.RunConfig(c, 0, t.TempDir())
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if len(cfg.Faults) != 1 || cfg.Faults[0] != w.nemesis {
			t.Errorf("%s: the trial runs %v, want %s", id, cfg.Faults, w.nemesis)
		}
		if got := cfg.Cluster.TopologyName(); got != cfgOf.Topology {
			t.Errorf("%s: topology %s, want %s", id, got, cfgOf.Topology)
		}
		if cfg.Recipe != cfgOf.Recipe || cfg.Fence != cfgOf.Fence {
			t.Errorf("%s: recipe %s fence %s, want %s %s", id, cfg.Recipe, cfg.Fence, cfgOf.Recipe, cfgOf.Fence)
		}
		if cfgOf.FenceSource != "" && cfg.FenceSource != cfgOf.FenceSource {
			t.Errorf("%s: fence source %s, want %s", id, cfg.FenceSource, cfgOf.FenceSource)
		}
		if w.fault == "clock-jump" && !cfg.Cluster.FakeTime {
			t.Errorf("%s: a clock fault needs the nodes under libfaketime", id)
		}
	}
	// The fenced Redlock draws its numbers from the database, never from Valkey.
	if c := cells["redlock-dbfence.failover"]; true {
		cfg, err := p.RunConfig(c, 0, t.TempDir())
		if err != nil || cfg.FenceSource != knob.FenceSourceResource || cfg.Fence != knob.FenceReadWrite {
			t.Errorf("redlock-dbfence: %v fence %s source %s", err, cfg.Fence, cfg.FenceSource)
		}
	}
}

// TestDeploymentPairsRefused: a pair that is neither mapped nor n/a is
// refused before the sweep starts, naming the pair; so is a replication
// fault on a deployment it cannot act on, and Redlock with the Valkey counter.
func TestDeploymentPairsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs []string
		faults  []string
		custom  string
		want    []string
	}{
		{name: "replication fault on redlock", configs: []string{"redlock"}, faults: []string{"link-down"},
			want: []string{"redlock.link-down", "cut-replication", "--topology sentinel"}},
		{name: "etcd fault on sentinel", configs: []string{"sentinel-fence"}, faults: []string{"etcd-kill-leader"},
			want: []string{"sentinel-fence.etcd-kill-leader", "--topology etcd"}},
		{name: "redlock with the Valkey counter", custom: "rl=redlock;fence=read-write;fence-source=valkey", faults: []string{"failover"},
			want: []string{"rl.failover", "--fence-source resource"}},
		{name: "everything n/a", configs: []string{"etcd", "sql-lease"}, faults: []string{"clock-jump"},
			want: []string{"every pair of the matrix is n/a"}},
		{name: "unknown topology", custom: "x=topology=zookeeper", faults: []string{"paused-client"},
			want: []string{"x.paused-client", "zookeeper"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := deploymentPlan(t, tc.configs, tc.faults)
			if tc.custom != "" {
				c, err := ParseConfig(tc.custom)
				if err != nil {
					t.Fatal(err)
				}
				p.Configs = append(p.Configs, c)
			}
			err := p.Validate()
			if err == nil {
				t.Fatalf("want a refusal naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// A kind that knows neither the backend nor a reason names what it maps.
	f := Fault{Name: "k", ByBackend: map[string][]string{"sentinel": {"clock-bump"}}}
	_, err := f.On(etcd.Topology)
	var na *NotApplicableError
	if err == nil || errors.As(err, &na) || !strings.Contains(err.Error(), "no meaning on a etcd deployment") {
		t.Errorf("unmapped backend: %v", err)
	}
}

// TestDecisionTable renders n/a rows and the cells' figures.
func TestDecisionTable(t *testing.T) {
	p := deploymentPlan(t, []string{"sentinel-fence", "etcd"}, []string{"failover", "clock-jump"})
	half := 0.5
	r := &Report{Plan: p, NotApplicable: p.NotApplicable(), Cells: []CellStats{
		{Config: "sentinel-fence", Fault: "failover", Trials: 1, Opportunities: 4, Hits: 2, P: &half, PLow: 0.15, PHi: 0.85,
			StaleHits: 2, PStale: &half, PStaleLow: 0.15, PStaleHigh: 0.85, Unit: "failover", NemesisKind: []string{"cut-replication"},
			AcquireOKMs: Dist{Count: 3, P50: 0.31, P99: 7.3}, Acquires: Acquires{Total: 10}, Availability: 0.7, RefusedShare: 0.3},
	}}
	tab := DecisionTable(r)
	for _, w := range []string{"| sentinel-fence | failover (cut-replication) | 1 | 4 failover(s) | 2/4 = 50% (15–85%) | 2/4 = 50% (15–85%)",
		"0.31 / 7.30 ms", "70.0% (30.0%, 0.0%)", "| etcd | clock-jump | – | – | n/a | n/a | – | – | n/a: etcd-clock-bump is refused"} {
		if !strings.Contains(tab, w) {
			t.Errorf("table lacks %q:\n%s", w, tab)
		}
	}
}

// TestParallelCaveat: cells whose trials ran side by side carry the caveat
// in the findings and under the decision table; cells run alone, or from
// folders that predate the record, do not.
func TestParallelCaveat(t *testing.T) {
	p := deploymentPlan(t, []string{"sentinel-fence"}, []string{"failover"})
	for _, tt := range []struct {
		trials []int // each trial's Record.Parallel
		want   bool
	}{{[]int{0, 0}, false}, {[]int{1, 1}, false}, {[]int{1, 3}, true}} {
		var ts []*Trial
		for i, n := range tt.trials {
			ts = append(ts, &Trial{Record: Record{Trial: i, Status: StatusOK, Parallel: n}, Result: &checker.Result{}})
		}
		cs := Combine(p.Cells()[0], ts)
		r := &Report{Plan: p, Cells: []CellStats{cs}}
		caveat := "trials at a time"
		var lines []string
		for _, f := range Findings(r) {
			lines = append(lines, f.Lines...)
		}
		inFindings := strings.Contains(strings.Join(lines, "\n"), caveat)
		inTable := strings.Contains(DecisionTable(r), "Figures measured with up to 3 "+caveat)
		if inFindings != tt.want || inTable != tt.want {
			t.Errorf("trials at parallel %v: caveat in findings %v, in table %v, want %v", tt.trials, inFindings, inTable, tt.want)
		}
	}
}
