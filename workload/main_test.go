package workload

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/cluster/clustertest"
	_ "github.com/lockjepsen/lockjepsen/deployments/sentinel" // the default deployment these tests start
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
	l, stop, err := clustertest.Start("workload")
	if err != nil {
		return 0, err
	}
	defer stop()
	testCluster, sentinels = l, l.WatcherAddrs()
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
