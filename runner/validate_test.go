package runner

import (
	"math"
	"strings"
	"testing"

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
