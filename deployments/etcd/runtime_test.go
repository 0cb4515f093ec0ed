package etcd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

func startEtcd(t *testing.T) *Local {
	t.Helper()
	cfg := cluster.Defaults()
	cfg.Topology, cfg.Dir = Topology, t.TempDir()
	rt, err := cluster.New(cfg, cluster.Binaries{})
	if err != nil {
		t.Fatalf("New (run 'make setup-etcd'): %v", err)
	}
	e := rt.(*Local)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Down(); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return e
}

// Three real members: one leader; SIGKILL it and another is elected; the
// killed one restarts from its data dir and the cluster is whole again.
func TestEtcdLeaderFailover(t *testing.T) {
	testslot.Parallel(t)
	e := startEtcd(t)
	ctx := context.Background()
	if got := len(cluster.MemberAddrs(e)); got != 3 {
		t.Fatalf("%d endpoints, want 3", got)
	}
	old, err := e.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(old.Name); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nl, err := e.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatal(err)
	}
	if nl.Name == old.Name {
		t.Fatalf("the killed leader %s still leads", old.Name)
	}
	t.Logf("leader %s killed, %s elected in %v", old.Name, nl.Name, time.Since(start).Round(time.Millisecond))
	if err := e.Restart(ctx, old.Name, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.SetClockOffset(old.Name, "+10"); err != ErrClock {
		t.Fatalf("SetClockOffset = %v, want the documented refusal", err)
	}
}

// The finding behind ErrClock, kept honest: etcd under libfaketime with
// a +1 day offset (which moves date(1)) logs true time. If a future etcd
// build honoured LD_PRELOAD, this fails and the clock fault can be enabled.
func TestEtcdIgnoresFaketime(t *testing.T) {
	testslot.Parallel(t)
	bins, err := cluster.FindBinaries()
	if err != nil || bins.FaketimeLib == "" {
		t.Skipf("libfaketime not found (run 'make setup'): %v", err)
	}
	bin, err := FindEtcd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rc := filepath.Join(dir, "faketime.rc")
	if err := os.WriteFile(rc, []byte("+1d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "LD_PRELOAD="+bins.FaketimeLib, "FAKETIME_TIMESTAMP_FILE="+rc,
		"FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1")
	date := exec.Command("date", "-u", "+%Y-%m-%d")
	date.Env = env
	faked, err := date.Output()
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format("2006-01-02")
	if strings.TrimSpace(string(faked)) == today {
		t.Fatalf("libfaketime did not move date(1) either: the probe proves nothing")
	}
	ports, err := cluster.FreePorts(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, p := "http://127.0.0.1:"+strconv.Itoa(ports[0]), "http://127.0.0.1:"+strconv.Itoa(ports[1])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--name", "x", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
		"--initial-advertise-peer-urls", p, "--initial-cluster", "x="+p, "--logger", "zap")
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	m := regexp.MustCompile(`"ts":"(\d{4}-\d\d-\d\d)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no timestamp in etcd's log:\n%s", out)
	}
	if string(m[1]) != today {
		t.Fatalf("etcd logged %s under libfaketime +1d (true date %s): its clock CAN be moved; enable etcd-clock-bump", m[1], today)
	}
}
