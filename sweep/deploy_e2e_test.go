package sweep

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/deployments/redlock"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

// TestDeploymentSweep runs the comparison for real, at its smallest: two
// deployments (Sentinel + fence, Redlock) × the failover kind × 1 trial of
// 15 s, back to back. It asserts that the kind was mapped per deployment in
// what the trials actually ran (nemesis.jsonl: cut-replication on Sentinel,
// crash-node on Redlock, neither on the other), that the Redlock cell measured
// availability from real acquires, and that table.md holds both rows. About
// a minute on 2 cores.
func TestDeploymentSweep(t *testing.T) {
	// Skipped before it waits for a slot: a -short run beside a full one
	// (CI's, which holds every slot for minutes) waited 10 min to skip.
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short outside CI: runs two real clusters for ~1 min")
	}
	testslot.Parallel(t)
	tmp := t.TempDir()
	bin := buildLockjepsen(t, tmp)
	dir := filepath.Join(tmp, "sweep")
	runSweep(t, bin, tmp, "--configs", "sentinel-fence,redlock", "--faults", "failover",
		"--trials", "1", "--time-limit", "15s", "--out", dir)
	ran := map[string]map[string]int{}
	for _, cell := range []string{"sentinel-fence.failover", "redlock.failover"} {
		ran[cell] = nemesisEvents(t, filepath.Join(dir, "trials", cell, "0", "nemesis.jsonl"))
	}
	if s := ran["sentinel-fence.failover"]; s["cut-replication"] == 0 || s["kill-node"] > 0 {
		t.Errorf("sentinel-fence × failover ran %v, want cut-replication (the failover race) and no kill-node", s)
	}
	if r := ran["redlock.failover"]; r["kill-node"] == 0 || r["cut-replication"] > 0 {
		t.Errorf("redlock × failover ran %v, want crash-node (logged as kill-node) and no cut-replication", r)
	}
	rep, err := Aggregate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trials != 2 || rep.Failed != 0 {
		t.Fatalf("trials %d failed %d, want 2 and 0", rep.Trials, rep.Failed)
	}
	for _, c := range rep.Cells {
		if c.Acquires.Total == 0 || c.Opportunities == 0 || c.Availability <= 0 || c.Availability > 1 {
			t.Errorf("%s: acquires %d, opportunities %d, availability %v: nothing measured", c.Cell, c.Acquires.Total, c.Opportunities, c.Availability)
		}
		if c.Config == "redlock" && (c.Backend != redlock.Topology || c.Unit != "fault" || c.P == nil || c.PStale == nil) {
			t.Errorf("redlock cell: backend %s unit %s P %v PStale %v", c.Backend, c.Unit, c.P, c.PStale)
		}
	}
	tab, err := os.ReadFile(filepath.Join(dir, TableFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| sentinel-fence | failover (cut-replication) |", "| redlock | failover (crash-node) |"} {
		if !strings.Contains(string(tab), w) {
			t.Errorf("table.md lacks %q:\n%s", w, tab)
		}
	}
	assertRecomputable(t, dir)
}

// nemesisEvents counts a trial's nemesis events by name.
func nemesisEvents(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			F string `json:"f"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out[e.F]++
		}
	}
	return out
}
