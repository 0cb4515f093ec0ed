package sweep

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/nemesis"
)

// TestEveryFaultParameterWalked walks every fault a sweep can name (the
// sweep's fault kinds and every nemesis fault, from their catalogs, so that a
// new fault is walked too) through each bad parameter: each is refused, naming
// the value the user typed, before any plan exists. A held fault takes a
// positive duration; one that acts at once refuses any.
func TestEveryFaultParameterWalked(t *testing.T) {
	var names []string
	for _, f := range FaultCatalog {
		names = append(names, f.Name)
	}
	names = append(names, nemesis.Names()...)
	bad := []struct{ param, says string }{
		{"duration=-4s", "duration=-4s"},
		{"duration=0s", "duration=0s"},
		{"duration=soon", `"soon"`},
		{"duration=", `""`},
		{"interval=0s", "interval=0s"},
		{"interval=-1s", "interval=-1s"},
		{"interval=1fortnight", `"1fortnight"`},
		{"length=4s", `"length"`},
	}
	held := 0
	for _, name := range names {
		for _, b := range bad {
			spec := name + ":" + b.param
			if _, err := LookupFault(spec); err == nil || !strings.Contains(err.Error(), b.says) {
				t.Errorf("--faults %s: %v, want it refused naming %s", spec, err, b.says)
			}
		}
		// The good values: a positive interval always, a duration only
		// where the fault holds for a time.
		if _, err := LookupFault(name + ":interval=7s"); err != nil {
			t.Errorf("--faults %s:interval=7s: %v", name, err)
		}
		_, err := LookupFault(name + ":duration=4s")
		f, _ := LookupFault(name)
		takes := f.takesDuration() == nil
		if takes != (err == nil) {
			t.Errorf("--faults %s:duration=4s: %v, but the fault holds for a time: %v", name, err, takes)
		}
		if takes {
			held++
		}
	}
	if held == 0 || held == len(names) {
		t.Errorf("%d of %d faults take a duration: the walk saw only one kind", held, len(names))
	}
}
