package runner

import (
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/shrink"
)

// checkShrinks shrinks a real failing run (issue 31: the failover-race run
// TestScenariosShowTheirLesson made, no cluster of its own) and re-checks
// the result as `lockjepsen check` would: the first double grant keeps at
// most 12 operations, the result is a 1-minimal sub-history that shows the
// same violation (Result.Verify), and the written folder checks invalid
// with that violation.
func checkShrinks(t *testing.T, dir string) {
	t.Helper()
	r, err := shrink.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := r.CheckOptions()
	if err != nil {
		t.Fatal(err)
	}
	opts.Marks = nemesis.Catalog()
	res, err := shrink.Shrink(r, shrink.Options{Check: opts})
	if err != nil {
		t.Fatalf("shrink %s: %v", dir, err)
	}
	if res.Target.Kind == "double-grant" && res.After.Operations > 12 {
		t.Errorf("the double grant shrank to %d operations, want at most 12", res.After.Operations)
	}
	if err := res.Verify(r, opts); err != nil {
		t.Fatalf("shrink %s: %v", dir, err)
	}
	out := filepath.Join(t.TempDir(), "shrunk")
	if err := res.Shrunk.Write(out); err != nil {
		t.Fatal(err)
	}
	if _, code, err := CheckDir(out, CheckOptions{NoHTML: true}); err != nil || code != ExitInvalid {
		t.Fatalf("check of the shrunk run: exit %d, %v; want 1", code, err)
	}
	var back checker.Result
	if err := runfolder.ReadJSON(filepath.Join(out, runfolder.Results), &back); err != nil {
		t.Fatal(err)
	}
	for _, v := range back.Violations {
		if v.Kind == res.Target.Kind && v.Key == res.Target.Key && v.Cause == res.Target.Cause {
			t.Logf("shrunk %s: %v -> %v in %v", res.Target, res.Before, res.After, res.Read+res.Elapsed)
			return
		}
	}
	t.Fatalf("check of the shrunk run does not show the %s", res.Target)
}
