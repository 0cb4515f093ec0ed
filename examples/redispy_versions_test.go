package examples

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// TestRedisPyReconnectRace is results/findings/006 before and after: redis-py's
// asyncio client on one connection, that connection lost, eight GETs at once.
// Debian's 4.3.4 hands some of them another call's bytes, an error or
// nothing; 6.4.0 (Debian sid's source, which make setup-ci unpacks into the
// cache) answers all eight. 10 of 10 runs each way before it was asserted.
func TestRedisPyReconnectRace(t *testing.T) {
	t.Parallel()
	tree := redisPyTree(t)
	port := valkeyServer(t)
	for _, tt := range []struct {
		name, pythonpath string
		exit             int
		says             string
	}{
		{"4.3.4", "", 1, "redis-py 4.3.4 from /usr/lib/python3/dist-packages"},
		{"sid", tree, 0, "8 of 8 GETs right; none wrong"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("redis-py-asyncio/reconnect_race.py", strconv.Itoa(port)) // its #! names Debian's python3
			cmd.Env = append(os.Environ(), "PYTHONPATH="+tt.pythonpath)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, isExit := err.(*exec.ExitError); isExit {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.exit || !strings.Contains(string(out), tt.says) {
				t.Fatalf("reconnect_race.py with PYTHONPATH=%q: exit %d, want %d, and %q in:\n%s", tt.pythonpath, code, tt.exit, tt.says, out)
			}
			if tt.exit == 1 && strings.Contains(string(out), "8 of 8 GETs right") {
				t.Fatalf("4.3.4 answered every GET right:\n%s", out)
			}
		})
	}
}

// redisPyTree is the redis-py source tree make setup-ci unpacks from Debian
// sid (the "after" of the redis-py findings).
func redisPyTree(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("LOCKJEPSEN_CACHE")
	if cache == "" {
		cache = "/var/cache/lockjepsen"
	}
	trees, _ := filepath.Glob(filepath.Join(cache, "redis-py-*", "redis"))
	if len(trees) == 0 {
		t.Fatalf("no redis-py source tree under %s (make setup-ci unpacks Debian sid's)", cache)
	}
	return filepath.Dir(trees[0])
}

// valkeyServer starts one Valkey with no persistence for the test's life
// and returns its port.
func valkeyServer(t *testing.T) int {
	t.Helper()
	b, err := cluster.FindBinaries()
	if err != nil {
		t.Fatalf("valkey-server (make setup): %v", err)
	}
	ports, err := cluster.FreePorts(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.Server, "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return ports[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("valkey-server did not listen on %s", addr)
	return 0
}
