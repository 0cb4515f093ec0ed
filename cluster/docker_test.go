package cluster

import (
	"context"
	"fmt"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/valkey-io/valkey-go"
)

// The Docker tests run against the real daemon, with the images built by
// scripts/build-images.sh. Outside CI they skip when Docker is absent; in CI
// (CI=true) they fail instead, so a broken Docker cannot pass unnoticed.

var imagesOnce struct {
	sync.Once
	err string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// needDocker builds the images once per test binary and returns an API client.
func needDocker(t *testing.T) *client.Client {
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
		t.Skipf("Docker is not reachable (%v); the docker runtime tests need a running daemon", err)
	}
	t.Cleanup(func() { api.Close() })
	imagesOnce.Do(func() {
		cmd := exec.Command("bash", "scripts/build-images.sh", "--quiet")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			imagesOnce.err = err.Error() + ": " + string(out)
		}
	})
	if imagesOnce.err != "" {
		t.Fatalf("build images: %s", imagesOnce.err)
	}
	return api
}

// dockerSlot makes t parallel, builds the images (once per test binary, one
// build at a time on the machine) and only then takes an end-to-end slot.
// Measured: with the slot taken first, three tests held every slot for the
// 3.5 minutes one of them spent building the images, and every package's
// end-to-end tests stood still meanwhile.
func dockerSlot(t *testing.T) {
	t.Helper()
	t.Parallel()
	needDocker(t)
	holdDockerRun(t)
}

// composeMu keeps TestComposeUp's docker-compose topology (held exclusively)
// apart from the docker runtime's runs (held shared): a docker run refuses to
// start beside a compose topology, rightly, as two topologies on one machine
// distort each other's timing. Side by side, three docker runs failed so.
//
// Both sides take it only once they hold an end-to-end slot, so that it
// covers running topologies, never queued ones. Taken before the slot, it
// serialised the package: a sync.RWMutex admits no new reader while a writer
// waits, the compose test waited for the docker runs queued for slots, and
// the four docker runtime tests queued behind it. In a fresh-clone run they
// got their slots 17 minutes in, and the cluster package took 17m56s, the
// longest of the suite.
var composeMu sync.RWMutex

// holdDockerRun takes an end-to-end slot, then composeMu shared, for a test
// that starts the docker runtime. No deadlock: the compose test also holds a
// slot before it waits for the running topologies, which need nothing more
// to end.
func holdDockerRun(t testing.TB) {
	t.Helper()
	testslot.Hold(t)
	composeMu.RLock()
	t.Cleanup(composeMu.RUnlock)
}

func startDocker(t *testing.T, mutate func(*Config)) *Docker {
	t.Helper()
	needDocker(t)
	bins, err := FindBinaries()
	if err != nil {
		t.Fatalf("find Valkey (run 'make setup'): %v", err)
	}
	cfg := Defaults()
	cfg.Runtime = "docker"
	cfg.Dir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	rt, err := New(cfg, bins)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	d := rt.(*Docker)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	if err := d.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("docker cluster %s up and ready in %v", d.RunID(), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := d.Down(); err != nil {
			t.Errorf("Down: %v", err)
		}
		assertNothingLeft(t, d.RunID())
		d.Close()
	})
	return d
}

// assertNothingLeft asks the daemon for any container or network of the run.
func assertNothingLeft(t *testing.T, runID string) {
	t.Helper()
	api := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := make(client.Filters).Add("label", dockerLabelRun+"="+runID)
	cs, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	ns, err := api.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatalf("list networks: %v", err)
	}
	if len(cs.Items) != 0 || len(ns.Items) != 0 {
		t.Errorf("after Down, run %s left %d containers and %d networks", runID, len(cs.Items), len(ns.Items))
	}
}

func dockerInfo(t *testing.T, d *Docker, name, field string) string {
	t.Helper()
	s, err := d.Command(ctxT(t, 5*time.Second), name, "INFO", "replication")
	if err != nil {
		return "error: " + err.Error()
	}
	return ParseInfo(s)[field]
}

// TestDockerTopology: Up gives container addresses that Sentinel announces,
// and every fault (pause, kill and restart as replica, clock, partition) acts
// through the Engine API and heals.
func TestDockerTopology(t *testing.T) {
	dockerSlot(t)
	d := startDocker(t, func(c *Config) { c.FakeTime = true })
	ctx := ctxT(t, 150*time.Second)

	// Sentinel announces the addresses the host dials: the nodes' own.
	p, err := d.Primary(ctx)
	if err != nil || p.Name != "valkey-0" {
		t.Fatalf("Primary = %v, %v; want valkey-0", p.Name, err)
	}
	for _, n := range d.Nodes() {
		if strings.HasPrefix(n.Addr, "127.") || n.PID == 0 {
			t.Fatalf("%s: addr %s pid %d; want a container address and a live pid", n.Name, n.Addr, n.PID)
		}
	}
	reps, err := sentinelList(ctx, d.topo.adm, d.WatcherAddrs()[0], "REPLICAS")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if _, ok := d.topo.NodeByAddr(r["ip"] + ":" + r["port"]); !ok {
			t.Errorf("Sentinel announces replica %s:%s, not a node address", r["ip"], r["port"])
		}
	}

	// Clock: the timestamp file in the bind mount moves the node's wall clock.
	checkClockJump(ctx, t, d, "valkey-1")

	// Pause is the cgroup freezer: the node stops answering, then resumes.
	checkPauseResume(ctx, t, d, "valkey-2")

	// Kill the primary: Sentinel fails over; it comes back as a replica.
	ft, err := MeasureFailover(ctx, d, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("docker failover: SIGKILL to writable %v, to advertised %v", ft.Writable.Round(time.Millisecond), ft.Advertised.Round(time.Millisecond))
	np, err := d.Primary(ctx)
	if err != nil || np.Name == "valkey-0" {
		t.Fatalf("primary after failover: %v, %v", np.Name, err)
	}
	if role := dockerInfo(t, d, "valkey-0", "role"); role != "slave" {
		t.Errorf("restarted valkey-0 is %s, want a replica of %s", role, np.Name)
	}

	// Partition the primary: the host still reaches it, its peers do not, the
	// majority side elects another primary; healed, it is demoted.
	old := np
	if err := d.Partition(old.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Command(ctx, old.Name, "SET", "written-in-minority", "1"); err != nil {
		t.Errorf("the host cannot reach the partitioned primary: %v", err)
	}
	np2, err := d.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatalf("no failover while %s is partitioned: %v", old.Name, err)
	}
	if role := dockerInfo(t, d, old.Name, "role"); role != "master" {
		t.Errorf("partitioned %s reports %s; it should still believe it is primary", old.Name, role)
	}
	if got := d.Partitioned(); len(got) != 1 || got[0] != old.Name {
		t.Errorf("Partitioned() = %v", got)
	}
	if err := d.Heal(old.Name); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after heal: %v", err)
	}
	if role := dockerInfo(t, d, old.Name, "role"); role != "slave" {
		t.Errorf("healed %s is %s, want demoted to a replica of %s", old.Name, role, np2.Name)
	}

	if err := d.CollectLogs(filepath.Join(t.TempDir(), "logs")); err != nil {
		t.Error(err)
	}
}

// checkClockJump moves node's wall clock an hour forward (libfaketime's
// timestamp file), reads it back with TIME, and sets it right again.
func checkClockJump(ctx context.Context, t *testing.T, d *Docker, node string) {
	t.Helper()
	n, _ := d.Node(node)
	checkClockShows(t, n, 50, d.SetClockOffset, func(args ...string) (valkey.ValkeyResult, error) {
		return d.topo.adm.do(ctx, n.Addr, args...)
	})
}

// checkClockShows moves node's clock +3600 s and back rounds times, and after
// each SetClockOffset reads TIME at once: the call must not return before
// the node shows the offset (Valkey reads gettimeofday at most once a
// millisecond, so an unwaited write is missed about once a hundred). A
// failure prints the TIME reply and the offset file's content.
func checkClockShows(t *testing.T, n Node, rounds int, set func(name, offset string) error, do func(args ...string) (valkey.ValkeyResult, error)) {
	t.Helper()
	for i := 0; i < rounds; i++ {
		for _, want := range []int64{3600, 0} {
			off := fmt.Sprintf("%+d", want)
			if err := set(n.Name, off); err != nil {
				t.Fatal(err)
			}
			r, err := do("TIME")
			if err != nil {
				t.Fatal(err)
			}
			parts, _ := r.AsStrSlice()
			if len(parts) != 2 {
				t.Fatalf("TIME reply %v", parts)
			}
			sec, _ := strconv.ParseInt(parts[0], 10, 64)
			if skew := sec - time.Now().Unix(); skew < want-100 || skew > want+100 {
				file, _ := os.ReadFile(filepath.Join(n.Dir, "faketime.rc"))
				t.Fatalf("round %d: SetClockOffset(%s, %s) returned, then TIME answered %v: %s's clock is %ds off, want about %+d; the offset file holds %q",
					i, n.Name, off, parts, n.Name, skew, want, strings.TrimSpace(string(file)))
			}
		}
	}
	if err := set(n.Name, ""); err != nil {
		t.Fatal(err)
	}
}

// checkPauseResume freezes node: it answers nothing until thawed, then PING
// works again.
func checkPauseResume(ctx context.Context, t *testing.T, d *Docker, node string) {
	t.Helper()
	if err := d.Pause(node); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Command(ctx, node, "PING"); err == nil {
		t.Error("a paused container answered PING")
	}
	if err := d.Resume(node); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Command(ctx, node, "PING"); err != nil {
		t.Errorf("PING after unpause: %v", err)
	}
}

func (d *Docker) mustAddr(t *testing.T, name string) string {
	n, ok := d.Node(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n.Addr
}
