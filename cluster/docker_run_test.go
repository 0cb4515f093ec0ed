package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/exitcode"

	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
	"github.com/moby/moby/client"
)

// End to end on the docker runtime: `lockjepsen run --runtime docker` finds the
// failover race and the partition's split brain, leaves no container or
// network behind, and plays the schedule the local runtime would have played.

func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func dockerAPI(t *testing.T) *client.Client {
	t.Helper()
	api, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker is not reachable in CI: %v", err)
		}
		t.Skipf("Docker is not reachable (%v)", err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

// buildAll builds the images (idempotent) and a lockjepsen binary for the runs.
func buildAll(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("bash", "scripts/build-images.sh", "--quiet")
	cmd.Dir = root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build images: %v: %s", err, out)
	}
	exe := filepath.Join(t.TempDir(), "lockjepsen")
	cmd = exec.Command("go", "build", "-o", exe, "./cmd/lockjepsen")
	cmd.Dir = root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return exe
}

// lj runs lockjepsen and returns its exit code, output and pid.
func lj(t *testing.T, exe string, args ...string) (int, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = t.TempDir()
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("lockjepsen %v: %v", args, err)
	}
	return code, out.String(), cmd.Process.Pid
}

func leftovers(t *testing.T, api *client.Client, owner int) (int, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := make(client.Filters).Add("label", "org.lockjepsen.owner-pid="+strconv.Itoa(owner))
	cs, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := api.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items), len(ns.Items)
}

func tail(s string) string {
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	var keep []string
	for _, l := range lines {
		if !strings.Contains(l, "ops/s") {
			keep = append(keep, l)
		}
	}
	if len(keep) > 40 {
		keep = keep[len(keep)-40:]
	}
	return strings.Join(keep, "\n")
}

func TestDockerRuns(t *testing.T) {
	t.Parallel()
	api := dockerAPI(t)
	exe := buildAll(t)
	out := t.TempDir()

	// The partition scenario is refused on the local runtime, before anything starts.
	code, text, _ := lj(t, exe, "run", "--scenario", "partition", "--runtime", "local", "--out", filepath.Join(out, "refused"))
	if code != exitcode.BadInput || !strings.Contains(text, "--runtime docker") {
		t.Errorf("partition on the local runtime: exit %d, %q; want exit 254 naming --runtime docker", code, text)
	}

	for _, sc := range []struct {
		name, want string
		code       int
		// retries: how many more seeds a run that missed its lesson gets.
		retries int
	}{
		// The race needs a grant inside the cut still alive when the
		// promoted replica grants to another client. On docker under load
		// it used to miss often (a landing's CI missed seeds 1-3): the
		// daemon's kill took up to 2.3 s, the paused replicas were resumed
		// after Sentinel had elected its leader, the failover was given up
		// for want of a replica and tried again 5 s later, past the lease.
		// Since the kill goes straight to the process (Docker.Kill) the
		// replicas are back 0.2-1.0 s after it and no failover is given up:
		// 10 of 10 seeds with three runs side by side beside a sweep (load
		// 10-22). Three seeds still, for a lease the old holder itself
		// takes again: the test fails when none shows the double grant.
		{"failover-race", "double-grant", 1, 2},
		{"partition", "lock service: invalid", 1, 0},
		// --net-proxy on docker: the proxies on the host's address in each
		// node's network, the resets on the primary's (10 of 10 valid).
		{"net-reset", "VALID: no violation found", 0, 0},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			cluster.HoldDockerRun(t)
			for seed := int64(1); ; seed++ {
				dir := filepath.Join(out, fmt.Sprintf("%s-%d", sc.name, seed))
				code, text := dockerRun(t, api, exe, dir, sc.name, seed)
				missed := code != sc.code || !strings.Contains(text, sc.want)
				if missed && seed <= int64(sc.retries) {
					t.Logf("%s seed %d: exit %d, the lesson did not show; once more with the next seed", sc.name, seed, code)
					continue
				}
				if missed {
					t.Errorf("%s --runtime docker seed %d: exit %d, want %d with %q:\n%s", sc.name, seed, code, sc.code, sc.want, tail(text))
				}
				break
			}
		})
	}
}

// dockerRun runs scenario name with seed on the docker runtime into dir,
// checks what it left behind and the schedule it played, and returns its
// exit code and output.
func dockerRun(t *testing.T, api *client.Client, exe, dir, name string, seed int64) (int, string) {
	t.Helper()
	start := time.Now()
	code, text, pid := lj(t, exe, "run", "--runtime", "docker", "--scenario", name, "--seed", strconv.FormatInt(seed, 10), "--out", dir)
	t.Logf("%s on docker: exit %d in %v", name, code, time.Since(start).Round(time.Second))
	if code != exitcode.Valid && code != exitcode.Invalid {
		t.Errorf("%s --runtime docker: exit %d:\n%s", name, code, tail(text))
	}
	if c, n := leftovers(t, api, pid); c != 0 || n != 0 {
		t.Errorf("%s left %d containers and %d networks behind", name, c, n)
	}
	// The docker run played exactly the schedule the same seed gives on
	// the local runtime: planning never looks at the runtime.
	var got runner.Config
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cluster.Runtime != "docker" || len(got.Schedule) == 0 {
		t.Errorf("%s: config.json runtime %q, %d steps", name, got.Cluster.Runtime, len(got.Schedule))
	}
	// (partition only runs on docker: its plan is compared with itself.)
	rt := "local"
	if s, _ := scenario.Get(name); s.Runtime != "" {
		rt = s.Runtime
	}
	if want := plan(t, name, rt, seed); !reflect.DeepEqual(got.Schedule, want) {
		t.Errorf("%s seed %d: docker schedule %v, local %v", name, seed, got.Schedule, want)
	}
	return code, text
}

func plan(t *testing.T, name, rt string, seed int64) []nemesis.Step {
	t.Helper()
	steps, err := tryPlan(name, rt, seed)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

// tryPlan is the schedule a scenario gets on a runtime, or why that runtime
// refuses it (a fault only one runtime can inject: the memory faults run
// valkey-benchmark on this machine).
func tryPlan(name, rt string, seed int64) ([]nemesis.Step, error) {
	s, err := scenario.Get(name)
	if err != nil {
		return nil, err
	}
	c := runner.FromScenario(s)
	c.Seed, c.Cluster.Runtime = seed, rt
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.Schedule, nil
}

// TestSameScheduleBothRuntimes: for every scenario and a few seeds, the plan
// is the same whichever runtime the config names.
func TestSameScheduleBothRuntimes(t *testing.T) {
	for _, name := range scenario.Names() {
		if s, _ := scenario.Get(name); s.Runtime != "" || s.Topology != "" || s.OldReplica {
			continue // only one runtime can carry it out: nothing to compare
		}
		if _, err := tryPlan(name, "docker", 1); err != nil && strings.Contains(err.Error(), "--runtime local") {
			continue // nor here: one of its faults or knobs needs the local runtime (the memory faults)
		}
		for seed := int64(1); seed <= 5; seed++ {
			l, d := plan(t, name, "local", seed), plan(t, name, "docker", seed)
			if !reflect.DeepEqual(l, d) {
				t.Errorf("%s seed %d: local %v, docker %v", name, seed, l, d)
			}
		}
	}
}
