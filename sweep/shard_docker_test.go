package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestShardsInRunnerContainers is the Kubernetes Indexed Job on one machine:
// the runner image (built here by scripts/build-images.sh --runner-only, FROM
// scratch) runs two shards of one tiny sweep side by side as two `docker run`
// containers with JOB_COMPLETION_INDEX=0 and 1, exactly the arguments
// kubernetes/sweep-job.yaml gives its pods; `lockjepsen sweep merge`
// joins their folders. The merged plan must equal the unsharded plan of the
// same flags, and every trial of it must appear once. Outside CI it skips
// when Docker is absent; in CI it fails instead. About a minute once the image
// is cached.
func TestShardsInRunnerContainers(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short outside CI: runs two shard containers")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker is not reachable in CI: %v\n%s", err, out)
		}
		t.Skipf("Docker is not reachable (%v): the shard e2e test runs the runner image", err)
	}
	build := exec.Command("bash", "scripts/build-images.sh", "--quiet", "--runner-only")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the runner image: %v\n%s", err, out)
	}
	tmp := t.TempDir()
	bin := buildLockjepsen(t, tmp)
	// The slot only now: the image build above may wait minutes on another
	// package's build of the same images.
	testslot.Hold(t)
	results := filepath.Join(tmp, "results")
	if err := os.MkdirAll(results, 0o777); err != nil {
		t.Fatal(err)
	}
	// 1 configuration × 1 fault × 2 trials of 12 s: trial 0 is shard 0's,
	// trial 1 shard 1's.
	flags := []string{"--configs", "none", "--faults", "link-down", "--trials", "2", "--time-limit", "12s"}

	unsharded := filepath.Join(tmp, "unsharded")
	if out, err := exec.Command(bin, append(append([]string{"sweep"}, flags...), "--dry-run", "--out", unsharded)...).CombinedOutput(); err != nil {
		t.Fatalf("sweep --dry-run --out: %v\n%s", err, out)
	}

	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("lockjepsen-shard-test-%d-%d", os.Getpid(), i)
		args := []string{"run", "--rm", "--name", name,
			"--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
			"-e", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i),
			"-v", results + ":/results", "lockjepsen/runner:latest", "sweep"}
		args = append(args, flags...)
		args = append(args, "--shard", "/2", "--continue", "--out", fmt.Sprintf("/results/shard-%d", i))
		cmd := exec.Command("docker", args...)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Run()
		}()
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		t.Fatal("the shard containers did not finish within 4 minutes")
	}
	for i := range errs {
		t.Logf("shard %d:\n%s", i, outs[i].String())
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if !strings.Contains(outs[i].String(), fmt.Sprintf("shard %d of 2", i)) {
			t.Errorf("shard %d did not take its index from JOB_COMPLETION_INDEX", i)
		}
	}
	for i, want := range []string{"0", "1"} {
		shard := filepath.Join(results, fmt.Sprintf("shard-%d", i))
		ents, _ := os.ReadDir(filepath.Join(shard, Trials, "none.link-down"))
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("shard %d ran trials %v, want [%s]", i, got, want)
		}
	}

	merged := filepath.Join(tmp, "merged")
	out, err := exec.Command(bin, "sweep", "merge", "--out", merged, filepath.Join(results, "shard-0"), filepath.Join(results, "shard-1")).CombinedOutput()
	t.Logf("sweep merge:\n%s", out)
	if err != nil {
		t.Fatalf("sweep merge: %v", err)
	}
	var a, b any
	readJSON(t, filepath.Join(unsharded, PlanFile), &a)
	readJSON(t, filepath.Join(merged, PlanFile), &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("merged plan differs from the unsharded plan:\n%v\n%v", a, b)
	}
	rep, err := Aggregate(merged)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trials != 2 || rep.Failed != 0 || rep.Pending != 0 {
		t.Errorf("merged: trials %d failed %d pending %d, want 2 0 0", rep.Trials, rep.Failed, rep.Pending)
	}
	for _, n := range []string{"0", "1"} {
		if _, err := os.Stat(filepath.Join(merged, Trials, "none.link-down", n, "results.json")); err != nil {
			t.Errorf("merged trial %s: %v", n, err)
		}
	}
	for _, f := range []string{"sweep.json", "sweep.csv", "index.html", "probability.png"} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Errorf("merged sweep lacks %s", f)
		}
	}
	assertRecomputable(t, merged)
	// The same shard twice is an overlap: refused.
	if out, err := exec.Command(bin, "sweep", "merge", "--out", filepath.Join(tmp, "twice"), filepath.Join(results, "shard-0"), filepath.Join(results, "shard-0")).CombinedOutput(); err == nil || !strings.Contains(string(out), "overlap") {
		t.Errorf("merging shard 0 twice: err %v, output %s; want a refusal naming the overlap", err, out)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
