package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/testvalkey"
)

// TestRedisPyReconnectRace is results/findings/006 before and after: redis-py's
// asyncio client on one connection, that connection lost, eight GETs at once.
// Debian's 4.3.4 hands some of them another call's bytes, an error or
// nothing; 6.4.0 (Debian sid's source, which make setup-ci unpacks into the
// cache) answers all eight. 10 of 10 runs each way before it was asserted.
func TestRedisPyReconnectRace(t *testing.T) {
	t.Parallel()
	tree := redisPyTree(t)
	b, err := cluster.FindBinaries()
	if err != nil {
		t.Fatalf("valkey-server (make setup): %v", err)
	}
	addr := testvalkey.Start(t, b.Server)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	for _, tt := range []struct {
		name, pythonpath string
		exit             int
		says             string
	}{
		{"4.3.4", "", 1, "redis-py 4.3.4 from /usr/lib/python3/dist-packages"},
		{"sid", tree, 0, "8 of 8 GETs right; none wrong"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("redis-py-asyncio/reconnect_race.py", port) // its #! names Debian's python3
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
