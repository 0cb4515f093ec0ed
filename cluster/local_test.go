package cluster

import (
	"bufio"
	"context"
	"fmt"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
)

// startCluster brings up a real topology for one test and tears it down after.
func startCluster(t *testing.T, mutate func(*Config)) *Local {
	t.Helper()
	bins, err := FindBinaries()
	if err != nil {
		t.Fatalf("find Valkey (run 'make setup'): %v", err)
	}
	cfg := Defaults()
	cfg.Dir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	l, err := NewLocal(cfg, bins)
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Down(); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return l
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustDo(t *testing.T, l *Local, addr string, args ...string) string {
	t.Helper()
	r, err := l.adm.do(ctxT(t, 5*time.Second), addr, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	s, _ := r.ToString()
	return s
}

func TestUpAllSentinelsAgree(t *testing.T) {
	testslot.Parallel(t)
	l := startCluster(t, nil)
	ctx := ctxT(t, 10*time.Second)
	p, err := l.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "valkey-0" {
		t.Fatalf("primary is %s, want valkey-0", p.Name)
	}
	for _, s := range l.WatcherAddrs() {
		got, err := sentinelPrimary(ctx, l, s)
		if err != nil || got != p.Addr {
			t.Fatalf("sentinel %s names %q (%v), want %s", s, got, err, p.Addr)
		}
	}
	for _, st := range l.Status(ctx) {
		want := map[string]string{"valkey-0": "master", "valkey-1": "slave", "valkey-2": "slave"}[st.Name]
		if st.Kind == roleSentinel {
			want = "sentinel"
		}
		if st.Role != want {
			t.Errorf("%s reports %s, want %s", st.Name, st.Role, want)
		}
	}
	if mustDo(t, l, p.Addr, "SET", "k", "v") != "OK" {
		t.Fatal("primary refused a write")
	}
}

func TestKillPrimaryPromotesReplicaAndRestartRejoins(t *testing.T) {
	testslot.Parallel(t)
	l := startCluster(t, nil)
	ctx := ctxT(t, 60*time.Second)
	old, _ := l.Primary(ctx)
	if err := l.Kill(old.Name); err != nil {
		t.Fatal(err)
	}
	np, err := l.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatal(err)
	}
	if np.Name == old.Name {
		t.Fatalf("failover kept %s", old.Name)
	}
	if got := mustDo(t, l, np.Addr, "SET", "after-failover", "1"); got != "OK" {
		t.Fatalf("new primary %s refused a write: %q", np.Name, got)
	}
	if err := l.Restart(ctx, old.Name, AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	inf, err := l.adm.info(ctx, old.Addr, "replication")
	if err != nil {
		t.Fatal(err)
	}
	if inf["role"] != "slave" || inf["master_host"]+":"+inf["master_port"] != np.Addr {
		t.Fatalf("restarted %s: role %s of %s:%s, want replica of %s", old.Name, inf["role"], inf["master_host"], inf["master_port"], np.Addr)
	}
	// Sentinel ends its reconfiguration of a demoted node with CLIENT KILL
	// TYPE normal, which closes the idle control connection too: the next
	// control command must still run (it read EOF, and a sweep trial lost
	// its verdict to it).
	mustDo(t, l, old.Addr, "PING")
	if n := killNormalClients(t, old.Addr); n < 1 {
		t.Fatalf("CLIENT KILL TYPE normal on %s closed %d connections, want the control one", old.Name, n)
	}
	if got := mustDo(t, l, old.Addr, "PING"); got != "PONG" {
		t.Fatalf("PING after CLIENT KILL: %q", got)
	}
}

// killNormalClients runs CLIENT KILL TYPE normal on addr from a connection of
// its own (spared: SKIPME yes) and returns how many it closed.
func killNormalClients(t *testing.T, addr string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "*6\r\n$6\r\nCLIENT\r\n$4\r\nKILL\r\n$4\r\nTYPE\r\n$6\r\nnormal\r\n$6\r\nSKIPME\r\n$3\r\nyes\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, ":")))
	if err != nil {
		t.Fatalf("CLIENT KILL replied %q", line)
	}
	return n
}

// A paused primary is failed over; resumed, it keeps accepting writes as a
// primary until Sentinel demotes it, and those writes are lost: the split-brain
// window the split-brain scenario relies on.
func TestPausedPrimaryIsDemotedAndLosesItsSplitBrainWrites(t *testing.T) {
	testslot.Parallel(t)
	l := startCluster(t, nil)
	ctx := ctxT(t, 60*time.Second)
	old, _ := l.Primary(ctx)
	if err := l.Pause(old.Name); err != nil {
		t.Fatal(err)
	}
	np, err := l.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resume(old.Name); err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := 0; i < 200; i++ {
		r, err := l.adm.do(ctx, old.Addr, "SET", fmt.Sprintf("split-%d", i), "x")
		if err == nil {
			if s, _ := r.ToString(); s == "OK" {
				accepted++
				continue
			}
		}
		break // READONLY: demoted
	}
	t.Logf("old primary accepted %d writes after resuming, before its demotion", accepted)
	if err := l.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	inf, _ := l.adm.info(ctx, old.Addr, "replication")
	if inf["role"] != "slave" {
		t.Fatalf("old primary not demoted: role %s", inf["role"])
	}
	if accepted > 0 {
		r, err := l.adm.do(ctx, np.Addr, "EXISTS", "split-0")
		n, _ := r.AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("a split-brain write survived on the new primary (EXISTS=%d, %v)", n, err)
		}
	}
}

func TestClockOffsetExpiresKeysEarlyOnThatNode(t *testing.T) {
	testslot.Parallel(t)
	l := startCluster(t, func(c *Config) { c.Replicas, c.FakeTime = 1, true })
	ctx := ctxT(t, 30*time.Second)
	p, _ := l.Primary(ctx)
	// SetClockOffset returns once the node shows the offset: 300 rounds,
	// where an unwaited write is missed about 1 in 100.
	checkClockShows(t, p, 300, l.SetClockOffset, func(args ...string) (valkey.ValkeyResult, error) {
		return l.adm.do(ctx, p.Addr, args...)
	})
	if got := mustDo(t, l, p.Addr, "SET", "lease", "a", "PX", "20000"); got != "OK" {
		t.Fatalf("SET: %q", got)
	}
	if err := l.SetClockOffset(p.Name, "+30"); err != nil {
		t.Fatal(err)
	}
	// The server caches its clock per event-loop turn, so the jump shows
	// within a cron tick rather than on the very next command.
	gone := false
	for deadline := time.Now().Add(2 * time.Second); !gone && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, _ := l.adm.do(ctx, p.Addr, "GET", "lease")
		gone = isNil(r.Error())
	}
	if !gone {
		t.Fatal("a key with 20 s left survives a +30 s clock jump")
	}
	if err := l.SetClockOffset(p.Name, ""); err != nil {
		t.Fatal(err)
	}
	mustDo(t, l, p.Addr, "SET", "lease2", "b", "PX", "20000")
	time.Sleep(200 * time.Millisecond)
	if got := mustDo(t, l, p.Addr, "GET", "lease2"); got != "b" {
		t.Fatalf("after the reset a fresh 20 s key is gone: %q", got)
	}
	if got := mustDo(t, l, p.Addr, "PING"); got != "PONG" {
		t.Fatalf("node stopped serving: %q", got)
	}
}

// TestQueuedCommandRunsOnResume: a command written to a stopped node waits
// in its socket and is answered once the node runs again (what
// CLUSTER FAILOVER TAKEOVER relies on to beat the replica's resync).
func TestQueuedCommandRunsOnResume(t *testing.T) {
	testslot.Parallel(t)
	l := startCluster(t, func(c *Config) { c.Replicas, c.Watchers = 0, 1 })
	ctx := ctxT(t, 30*time.Second)
	p, err := l.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := DialQueued(ctx, p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := l.Pause(p.Name); err != nil {
		t.Fatal(err)
	}
	if err := q.Send("SET", "queued", "1"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if r, err := q.Reply(wctx); err == nil {
		t.Errorf("a stopped node answered %q", r)
	}
	cancel()
	if err := l.Resume(p.Name); err != nil {
		t.Fatal(err)
	}
	if r, err := q.Reply(ctx); err != nil || r != "OK" {
		t.Fatalf("after the resume the queued SET answered %q, %v; want OK", r, err)
	}
	if got := mustDo(t, l, p.Addr, "GET", "queued"); got != "1" {
		t.Fatalf("GET queued = %q after the queued SET", got)
	}
}

func isNil(err error) bool { return err != nil && strings.Contains(err.Error(), "nil") }

// The orphan test re-executes this test binary as a child that starts a
// cluster; the parent SIGKILLs the child and every node must die with it.
func TestNoOrphansAfterTheOwnerIsKilled(t *testing.T) {
	if os.Getenv("LOCKJEPSEN_ORPHAN_CHILD") != "" {
		t.Skip("run as the child of the orphan test")
	}
	// The child starts the cluster under this test's slot: it takes none.
	testslot.Parallel(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKJEPSEN_ORPHAN_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "ready")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(state); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child never brought its cluster up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	bins, _ := FindBinaries()
	l, err := LoadLocal(dir, bins)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range l.Nodes() {
		if n.PID != 0 {
			pids = append(pids, n.PID)
		}
	}
	if len(pids) != 6 {
		t.Fatalf("child started %d nodes, want 6", len(pids))
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, pid := range pids {
		if !WaitGone(pid, 5*time.Second) {
			syscallKill(pid)
			t.Errorf("node pid %d outlived its killed owner", pid)
		}
	}
}

func TestOrphanChild(t *testing.T) {
	dir := os.Getenv("LOCKJEPSEN_ORPHAN_CHILD")
	if dir == "" {
		t.Skip("only runs as the child of TestNoOrphansAfterTheOwnerIsKilled")
	}
	bins, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Dir = dir
	l, err := NewLocal(cfg, bins)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
	time.Sleep(time.Minute) // until the parent kills us
}
