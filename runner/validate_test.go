package runner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// What the flags alone tell is refused by Validate, before anything starts:
// a recipe the Lua-less build cannot run (once found only by the capability
// check of a running topology, exit 255), a drift factor that is not a
// number, a DSN pgx cannot read.
func TestValidateRefusesWhatTheFlagsTell(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(c *Config)
		want string // "" = accepted
	}{
		{"native on nolua", func(c *Config) { c.Cluster.Build = "nolua" }, ""},
		{"lua on nolua", func(c *Config) { c.Cluster.Build, c.Recipe = "nolua", "lua" }, "--recipe lua cannot run on --valkey-build nolua"},
		{"redsync on nolua", func(c *Config) { c.Cluster.Build, c.Recipe, c.Fence = "nolua", "redsync", "none" }, "a Lua engine"},
		{"valkeylock on nolua", func(c *Config) { c.Cluster.Build, c.Recipe, c.Fence = "nolua", "valkeylock", "none" }, "--valkey-build nolua"},
		{"lua on the default build", func(c *Config) { c.Recipe = "lua" }, ""},
		{"drift NaN", func(c *Config) { c.DriftFactor = math.NaN() }, "--drift-factor"},
		{"dsn", func(c *Config) { c.ResourceDSN = "postgres://postgres@127.0.0.1:5432/x?sslmode=disable" }, ""},
		{"dsn unreadable", func(c *Config) { c.ResourceDSN = "/proc/lockjepsen-nope/x" }, "--resource-dsn"},
		// The network faults need the proxies, which need the local Sentinel
		// topology; their sizes must make sense inside the run.
		{"net fault with the proxies", func(c *Config) { c.Faults, c.Cluster.NetProxy = []string{"net-latency"}, true }, ""},
		{"net fault without the proxies", func(c *Config) { c.Faults = []string{"net-timeout"} }, "--net-proxy"},
		// Accepted here: the probe asks the program whether it dials
		// through LOCKJEPSEN_DIAL_MAP (lock.TestExecInit).
		{"slow replication through an exec adapter", func(c *Config) {
			c.Faults, c.Cluster.NetProxy, c.Recipe, c.Fence = []string{"net-slow-replication"}, true, "exec:/bin/true", "none"
		}, ""},
		{"proxies on docker", func(c *Config) { c.Cluster.NetProxy, c.Cluster.Runtime = true, "docker" }, ""},
		{"proxies on standalone", func(c *Config) {
			c.Faults, c.Cluster.NetProxy, c.Cluster.Topology = []string{"net-reset"}, true, "standalone"
		}, ""},
		{"proxies on cluster", func(c *Config) {
			c.Faults, c.Cluster.NetProxy, c.Cluster.Topology, c.Cluster.Replicas = []string{"net-reset"}, true, "cluster", 1
		}, ""},
		{"proxies on etcd", func(c *Config) { c.Cluster.NetProxy, c.Cluster.Topology, c.Recipe = true, "etcd", "etcd-mutex" }, "--net-proxy"},
		// Redlock's partial partition is made inside the clients: a library
		// that cannot be told which nodes to skip would run without it.
		{"partial partition through redsync", func(c *Config) {
			c.Faults, c.Cluster.Topology, c.Recipe, c.Fence = []string{"redlock-restart"}, "redlock", "redsync", "none"
		}, "unreachable"},
		{"partial partition through an exec program", func(c *Config) {
			c.Faults, c.Cluster.Topology, c.Recipe, c.Fence = []string{"redlock-restart"}, "redlock", "exec:/bin/true", "none"
			c.TimeLimit = time.Minute
		}, ""},
		// The reply faults act on the project's Valkey connections, or tell
		// an exec program (its probe asks whether it takes them:
		// lock.TestExecInit); a client of etcd is reached by neither.
		{"a cancelled call through an exec program", func(c *Config) {
			c.Faults, c.Recipe, c.Fence = []string{"cancel-acquire"}, "exec:/bin/true", "none"
		}, ""},
		{"a dropped reply through etcd's client", func(c *Config) {
			c.Faults, c.Cluster.Topology, c.Recipe, c.Fence = []string{"drop-release-reply"}, "etcd", "etcd-mutex", "none"
		}, `"drop_reply"`},
		{"slow replication on redlock", func(c *Config) {
			c.Faults, c.Cluster.NetProxy, c.Cluster.Topology, c.Recipe, c.Fence = []string{"net-slow-replication"}, true, "redlock", "redlock", "none"
		}, "replica"},
		{"latency past the time limit", func(c *Config) { c.Net.Latency = c.TimeLimit + 1 }, "--net-latency"},
		{"jitter above the latency", func(c *Config) { c.Net.Jitter = c.Net.Latency + 1 }, "--net-jitter"},
		{"share above 1", func(c *Config) { c.Net.Share = 1.5 }, "--net-share"},
		{"share NaN", func(c *Config) { c.Net.Share = math.NaN() }, "--net-share"},
		{"no sizes: the defaults", func(c *Config) { c.Net = nemesis.NetSizes{} }, ""},
	} {
		sc, _ := scenario.Get("failover-race")
		cfg := FromScenario(sc)
		tt.set(&cfg)
		err := cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
}
