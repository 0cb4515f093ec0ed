package workload

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// The client processes of these tests are this test binary re-executed: with
// clientEnv set, TestMain serves as `lockjepsen client` instead of testing, so
// the tests do not depend on the rest of cmd/lockjepsen building.
const clientEnv = "LOCKJEPSEN_TEST_CLIENT"

var (
	testCluster *cluster.Local
	sentinels   []string
)

func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) == "1" {
		if err := Serve(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	code, err := runTests(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload tests:", err)
		code = 2
	}
	os.Exit(code)
}

func runTests(m *testing.M) (int, error) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		return 0, err // never skip: CI must have Valkey 9 (make setup)
	}
	dir, err := os.MkdirTemp("", "lockjepsen-workload-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cfg := cluster.Defaults()
	cfg.Dir = dir
	l, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		return 0, err
	}
	// A loaded 2-core machine sometimes misses the 30 s readiness wait; one
	// more try beats a red build for a slow start.
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = l.Up(ctx)
		cancel()
		if err == nil {
			break
		}
		l.Down()
		if attempt == 2 {
			return 0, fmt.Errorf("cluster up: %w", err)
		}
		fmt.Fprintln(os.Stderr, "cluster up failed, retrying:", err)
	}
	defer l.Down()
	testCluster, sentinels = l, l.SentinelAddrs()
	return m.Run(), nil
}

// startClients starts n re-executed client processes from base, slot by slot.
func startClients(t *testing.T, ctx context.Context, n int, base ClientConfig) []*Client {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cs []*Client
	for i := 0; i < n; i++ {
		cfg := base
		cfg.Slot, cfg.NumClients = i, n
		c, err := StartClientWith(ctx, exe, cfg, StartOptions{Args: []string{}, Env: []string{clientEnv + "=1"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Kill() })
		cs = append(cs, c)
	}
	return cs
}
