package workshop

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/internal/checkertest"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Lab 2's last step shrinks the session's own lab2 run and draws it: on a
// generated failover run in lab2's folder it writes a shrunk run folder
// with its timeline, and its claims hold there.
func TestShrinkStep(t *testing.T) {
	l, err := Get(2)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := step(l, "lab2-shrunk")
	if !ok {
		t.Fatal("lab 2 has no lab2-shrunk step")
	}
	dir := t.TempDir()
	events, attempts, _ := checkertest.Simulate(checkertest.Config{Seed: 2, Clients: 8, Keys: 1, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01, Failovers: 2, FailEvery: 15e8})
	if err := checkertest.WriteRun(filepath.Join(dir, s.From), events, attempts); err != nil {
		t.Fatal(err)
	}
	r := runStep(context.Background(), s, nil, Options{Dir: dir, Out: io.Discard})
	if r.Err != nil || r.Code != 1 || !r.Held() {
		t.Fatalf("err %v, exit %d, claims %+v\n%s", r.Err, r.Code, r.Claims, r.Summary)
	}
	for _, f := range []string{runfolder.TimelinePNG, runfolder.Index, runfolder.Shrink, runfolder.Results} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
			t.Errorf("the shrunk folder has no %s", f)
		}
	}
	// Without the run it shrinks, the step says which step must come first.
	r = runStep(context.Background(), s, nil, Options{Dir: t.TempDir(), Out: io.Discard})
	if r.Err == nil {
		t.Fatal("a shrink of a missing run succeeded")
	}
}
