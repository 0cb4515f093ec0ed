package runner

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// --fence-source is checked once, in Validate: the resource's numbers fence
// any recipe, the libraries that cannot INCR included, but only with a fence
// mode that checks them.
func TestValidateFenceSource(t *testing.T) {
	sc, _ := scenario.Get("failover-race")
	for _, tt := range []struct {
		recipe, fence, source string
		want                  string // "" = accepted
	}{
		{"native", "read-write", "", ""},
		{"native", "read-write", "resource", ""},
		{"redsync", "read-write", "resource", ""},
		{"valkeylock", "write", "resource", ""},
		{"sql-lease", "read-write", "valkey", ""},
		{"redsync", "read-write", "valkey", "--fence-source resource"},
		{"native", "none", "resource", "--fence none"},
		{"native", "read-write", "database", "--fence-source"},
	} {
		cfg := FromScenario(sc)
		cfg.Recipe, cfg.Fence, cfg.FenceSource = tt.recipe, tt.fence, tt.source
		err := cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: refused: %v", tt, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: got %v, want an error naming %s", tt, err, tt.want)
		case err == nil && cfg.FenceSource == "":
			t.Errorf("%+v: fence source left empty", tt)
		}
	}
	if c := FromScenario(sc); c.FenceSource != knob.FenceSourceValkey {
		t.Errorf("default fence source %q", c.FenceSource)
	}
}

// Redlock has no counter of its own: the database's sequence fences it
// (--fence-source resource); a Valkey INCR is still refused, naming the fix.
func TestValidateRedlockFenceSource(t *testing.T) {
	sc, _ := scenario.Get("redlock-baseline")
	for _, tt := range []struct {
		fence, source string
		want          string // "" = accepted
	}{
		{"none", "", ""},
		{"read-write", "resource", ""},
		{"write", "resource", ""},
		{"read-write", "valkey", "--fence-source resource"},
	} {
		cfg := FromScenario(sc)
		cfg.Fence, cfg.FenceSource = tt.fence, tt.source
		err := cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: refused: %v", tt, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: got %v, want an error naming %s", tt, err, tt.want)
		}
	}
}
