package sweep

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

func TestParseShard(t *testing.T) {
	for _, tt := range []struct {
		s, env string
		want   Shard
		err    bool
	}{
		{"1/4", "", Shard{1, 4}, false},
		{"1/4", "3", Shard{1, 4}, false}, // given in full: the flag wins
		{"/4", "3", Shard{3, 4}, false},
		{"4", "2", Shard{2, 4}, false},
		{"/4", "", Shard{}, true},
		{"4/4", "", Shard{}, true},
		{"-1/4", "", Shard{}, true},
		{"x/2", "", Shard{}, true},
		{"/0", "0", Shard{}, true},
	} {
		got, err := ParseShard(tt.s, tt.env)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("ParseShard(%q, %q) = %v, %v; want %v, error %v", tt.s, tt.env, got, err, tt.want, tt.err)
		}
	}
}

// Every trial of a plan belongs to exactly one shard, and shards take turns
// through the rounds (so each gets trial n of about the same cells).
func TestShardsPartitionTheTrials(t *testing.T) {
	p := testPlan()
	p.Trials, p.UntilCI, p.MaxTrials = 3, 0.2, 7
	for _, n := range []int{1, 2, 3, 5} {
		owners := map[string]int{}
		for i := 0; i < n; i++ {
			q := p
			q.Shard = &Shard{i, n}
			for ci, c := range q.Cells() {
				for t2 := 0; t2 < q.MaxTrials; t2++ {
					if q.Owns(ci, t2) {
						owners[c.ID()+"/"+string(rune('0'+t2))]++
					}
				}
			}
		}
		if len(owners) != len(p.Jobs()) {
			t.Errorf("%d shards own %d trials, the plan has %d", n, len(owners), len(p.Jobs()))
		}
		for k, v := range owners {
			if v != 1 {
				t.Errorf("%d shards: trial %s owned %d times", n, k, v)
			}
		}
	}
}

func TestEnough(t *testing.T) {
	p := Plan{UntilCI: 0.2, Below: 0.04}
	for _, tt := range []struct {
		hits, opps int
		want       bool
	}{
		{0, 0, false},
		{0, 20, false}, // [0, 16%]: not below 4%
		{0, 93, true},  // [0, 3.97%]
		{0, 92, false},
		{10, 20, false},
		{46, 92, false},
		{48, 96, true}, // width 0.196
		{95, 100, true},
	} {
		if got := p.Enough(tt.hits, tt.opps); got != tt.want {
			lo, hi := Wilson(tt.hits, tt.opps, Z95)
			t.Errorf("Enough(%d, %d) = %v, want %v (interval %.4f-%.4f)", tt.hits, tt.opps, got, tt.want, lo, hi)
		}
	}
	z, h := p.OpportunitiesFor()
	if z != 93 || h < 90 || h > 100 {
		t.Errorf("OpportunitiesFor = %d, %d; want 93 and ~96", z, h)
	}
	// A shard of 4 judges its counts as a quarter of the merged cell's.
	s := p
	s.Shard = &Shard{0, 4}
	if !s.Enough(0, 24) || s.Enough(0, 23) {
		t.Error("a shard of 4 should be done with 0 of 24 (0 of 96 merged) and not with 0 of 23")
	}
}

// A sharded adaptive sweep run shard by shard (stand-in runner) and merged has
// every trial once, the unsharded plan, and refuses overlapping or foreign
// shards.
func TestShardsRunAndMerge(t *testing.T) {
	tmp := t.TempDir()
	base := testPlan() // 2 cells × 3 trials
	var dirs []string
	for i := 0; i < 2; i++ {
		p := base
		p.Shard = &Shard{i, 2}
		d := filepath.Join(tmp, "shard-"+string(rune('0'+i)))
		if err := Start(d, p); err != nil {
			t.Fatal(err)
		}
		rep, err := Execute(context.Background(), d, Options{Run: fakeRun})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending != 0 || rep.Trials != 3 {
			t.Errorf("shard %d: %d trials, %d pending; want 3 and 0", i, rep.Trials, rep.Pending)
		}
		dirs = append(dirs, d)
	}
	// Evidence each shard kept: a cell's from the first shard given that
	// has one, a half-written folder (no index.html) from none.
	cell := base.Cells()[0].ID()
	for i, body := range []string{"shard 0's", "shard 1's"} {
		ev := EvidenceDir(dirs[i], cell)
		if err := os.MkdirAll(ev, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ev, runfolder.Index), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(EvidenceDir(dirs[1], "half.written"), 0o755); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(tmp, "merged")
	rep, err := Merge(merged, dirs)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(EvidenceDir(merged, cell), runfolder.Index)); err != nil || string(b) != "shard 0's" {
		t.Errorf("merged evidence of %s: %q, %v; want shard 0's", cell, b, err)
	}
	if _, err := os.Stat(EvidenceDir(merged, "half.written")); err == nil {
		t.Error("a half-written evidence folder was merged")
	}
	if rep.Trials != 6 || rep.Pending != 0 {
		t.Errorf("merged: %d trials, %d pending; want 6 and 0", rep.Trials, rep.Pending)
	}
	got, _ := ReadPlan(merged)
	want := base
	if b, _ := os.ReadFile(filepath.Join(merged, PlanFile)); strings.Contains(string(b), "shard") {
		t.Errorf("merged plan.json still names a shard:\n%s", b)
	}
	if !reflect.DeepEqual(got.Cells(), want.Cells()) || got.Trials != want.Trials || got.Seed != want.Seed {
		t.Errorf("merged plan %+v differs from the unsharded %+v", got, want)
	}
	assertRecomputable(t, merged)
	for _, c := range rep.Cells {
		if c.Parallel > 1 {
			t.Errorf("%s: parallel %d from shards at --parallel 1 on machines of their own, want 1", c.Cell, c.Parallel)
		}
	}
	// Shards side by side on one machine: the merged cells carry the
	// machine's load, and their table says so.
	onOne := filepath.Join(tmp, "merged-on-one")
	rep, err = MergeOn(onOne, dirs, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		if c.Parallel != 3 {
			t.Errorf("%s: parallel %d, want the 3 trials at once on the machine", c.Cell, c.Parallel)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(onOne, TableFile)); !strings.Contains(string(b), "up to 3 trials at a time") {
		t.Errorf("table.md of shards side by side lacks the caveat:\n%s", b)
	}

	if _, err := Merge(filepath.Join(tmp, "m2"), []string{dirs[0], dirs[0]}); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("the same shard twice: %v, want an overlap refusal", err)
	}
	other := base
	other.Seed = 99
	other.Shard = &Shard{1, 2}
	od := filepath.Join(tmp, "other")
	if err := Start(od, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(filepath.Join(tmp, "m3"), []string{dirs[0], od}); err == nil || !strings.Contains(err.Error(), "different plans") {
		t.Errorf("shards of different plans: %v, want a refusal", err)
	}
	three := base
	three.Shard = &Shard{1, 3}
	td := filepath.Join(tmp, "three")
	if err := Start(td, three); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(filepath.Join(tmp, "m4"), []string{dirs[0], td}); err == nil {
		t.Error("shards of 2 and of 3 merged")
	}
	if _, err := Merge(filepath.Join(tmp, "m5"), []string{merged}); err == nil || !strings.Contains(err.Error(), "not a shard") {
		t.Errorf("an unsharded folder: %v, want a refusal", err)
	}
}

// --until-ci adds trials to a cell until its interval is narrow enough, and
// stops at --max-trials.
func TestUntilCI(t *testing.T) {
	dir := t.TempDir()
	p := testPlan()
	p.Trials, p.UntilCI, p.MaxTrials = 1, 0.5, 8
	if err := Start(dir, p); err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), dir, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		// One opportunity a trial, every other one a hit: about 15 are
		// needed for a width of 0.5, so the cap of 8 trials stops it.
		if c.Trials != 8 {
			t.Errorf("%s: %d trials, want the cap of 8 (width %.2f)", c.Cell, c.Trials, c.PHi-c.PLow)
		}
		// A cell that stopped at its cap says so, in sweep.json and in
		// both tables: its interval is wider than the rule asked.
		if !c.StoppedAtCap || c.MaxTrials != 8 {
			t.Errorf("%s: stopped_at_cap %v max_trials %d, want true 8", c.Cell, c.StoppedAtCap, c.MaxTrials)
		}
	}
	for _, f := range []string{TableFile, "index.html"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); !strings.Contains(string(b), "stopped at the cap of 8") {
			t.Errorf("%s does not say the cells stopped at their cap", f)
		}
	}
	dir2 := t.TempDir()
	p.UntilCI, p.MaxTrials = 0.9, 8
	if err := Start(dir2, p); err != nil {
		t.Fatal(err)
	}
	rep, err = Execute(context.Background(), dir2, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		if c.PHi-c.PLow >= 0.9 || c.Trials >= 8 || c.StoppedAtCap {
			t.Errorf("%s: %d trials, width %.2f, stopped at cap %v: want fewer than 8 trials, a width below 0.9, the rule met", c.Cell, c.Trials, c.PHi-c.PLow, c.StoppedAtCap)
		}
	}
}
