package lock

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/cluster/clustertest"
	_ "github.com/lockjepsen/lockjepsen/deployments/sentinel" // the default deployment these tests start
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/valkey-io/valkey-go"
)

// One real Valkey 9 primary with two replicas and three Sentinels serves every
// test in the package; starting one takes seconds, so it is shared.
var (
	testCluster *cluster.Local
	sentinels   []string
	raw         valkey.Client // inspects keys behind the recipes' backs
)

func TestMain(m *testing.M) {
	code, err := runTests(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lock tests:", err)
		code = 2
	}
	os.Exit(code)
}

func runTests(m *testing.M) (int, error) {
	l, stop, err := clustertest.Start("lock")
	if err != nil {
		return 0, err
	}
	defer stop()
	testCluster, sentinels = l, l.WatcherAddrs()
	raw, err = Connect(Config{Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName}})
	if err != nil {
		return 0, err
	}
	defer raw.Close()
	return m.Run(), nil
}

func testConfig(recipe string) Config {
	return Config{Recipe: recipe, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels, MasterSet: cluster.MasterName},
		TTL: 2 * time.Second, RenewEvery: 500 * time.Millisecond, OpTimeout: time.Second}
}

func open(t *testing.T, cfg Config) Lock {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.Recipe, err)
	}
	t.Cleanup(l.Close)
	return l
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func pttl(t *testing.T, key string) int64 {
	t.Helper()
	v, err := raw.Do(context.Background(), raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return v
}

func get(t *testing.T, key string) string {
	t.Helper()
	v, err := raw.Do(context.Background(), raw.B().Get().Key(key).Build()).ToString()
	if valkey.IsValkeyNil(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

func mustOutcome(t *testing.T, what string, r Result, want Outcome) {
	t.Helper()
	if r.Outcome != want {
		t.Fatalf("%s: outcome %s (%v), want %s", what, r.Outcome, r.Err, want)
	}
}
