package sweep

import (
	"strings"
	"testing"
)

// One sweep puts a fault over a target to every deployment: each cell runs
// that deployment's entry, and a deployment without the target is n/a with
// the reason, not refused.
func TestFaultsOverTargetsAcrossDeployments(t *testing.T) {
	p := deploymentPlan(t, []string{"sentinel-fence", "redlock", "etcd", "zookeeper", "sql-lease"}, []string{"kill-leader", "pause-one"})
	if err := p.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	want := map[string]string{ // cell -> the entry its trials run; "" n/a
		"sentinel-fence.kill-leader": "kill-primary",
		"etcd.kill-leader":           "etcd-kill-leader",
		"zookeeper.kill-leader":      "zk-kill-leader",
		"redlock.kill-leader":        "",
		"sql-lease.kill-leader":      "",
		"redlock.pause-one":          "pause-node",
		"etcd.pause-one":             "",
		"sentinel-fence.pause-one":   "",
	}
	cells := map[string]Cell{}
	for _, c := range p.Cells() {
		cells[c.ID()] = c
	}
	na := map[string]string{}
	for _, n := range p.NotApplicable() {
		na[n.Config+"."+n.Fault] = n.Reason
	}
	for id, entry := range want {
		if entry == "" {
			if r, ok := na[id]; !ok || !strings.Contains(r, "no ") {
				t.Errorf("%s: want n/a with a reason, got %q (cell %v)", id, r, cells[id].Fault.Faults)
			}
			continue
		}
		c, ok := cells[id]
		if !ok {
			t.Errorf("%s: no cell (n/a: %q)", id, na[id])
			continue
		}
		cfg, err := p.RunConfig(c, 0, t.TempDir())
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if len(cfg.Faults) != 1 || cfg.Faults[0] != entry {
			t.Errorf("%s: the trial runs %v, want %s", id, cfg.Faults, entry)
		}
	}
	// A duration applies where some entry of the target is held for one.
	if _, err := LookupFault("pause-leader:duration=4s"); err != nil {
		t.Errorf("pause-leader:duration=4s: %v", err)
	}
	if _, err := LookupFault("kill-leader:duration=4s"); err == nil || !strings.Contains(err.Error(), "acts at once") {
		t.Errorf("kill-leader:duration=4s: %v, want a refusal", err)
	}
}
