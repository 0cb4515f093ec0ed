package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// Fault is one kind of fault as a value, after etcd's failpoints and Jepsen's
// nemeses: it knows its name and doc, what a run needs for it, whether it
// makes Sentinel fail over, the events it writes to the history (each with
// its heal and the cause a violation in force is blamed on), how to plan a
// step, and how to inject it — Inject returns once the fault is healed. To add
// a fault, add one entry to the catalog in faults.go.
type Fault struct {
	Name string
	Doc  string // one line, shown by `run -h`
	// Failover: each injection makes Sentinel promote a replica, so a sweep
	// counts failovers as its opportunities; other faults count injections.
	Failover bool
	Needs    Needs
	// Marks are the events the fault logs, the first one at injection: it
	// anchors the fault on the history's clock.
	Marks []Mark

	// plan draws the step's parameters from the schedule's generator.
	plan func(rng *rand.Rand, p PlanParams) Step
	// span is how long the fault and its aftermath (failover, rejoin) occupy.
	span   func(s Step, p PlanParams) time.Duration
	inject func(ctx context.Context, env Env, s Step) error
}

// Needs is what a run must have for a fault to be injected.
type Needs struct {
	Replicas int    // replicas in the topology (a failover needs one to promote)
	FakeTime bool   // nodes under libfaketime (the runner turns it on)
	Runtime  string // "" any, else the only runtime that can inject it
}

// Mark is one fault event of the history: Event begins an interval that the
// later event Heal on the same node ends; violations inside it are blamed on
// Cause.
type Mark struct {
	Event, Heal, Cause string
}

// Causes, from the server-side faults that can make a correct-looking server
// grant a lock twice to the client-side ones that only make a client outlive
// its lease.
const (
	CauseFastRestart = "fast-restart"
	CauseFailover    = "failover"
	CauseSplitBrain  = "split-brain"
	CauseServerClock = "server-clock"
	CauseReplication = "replication"
	CauseClientPause = "client-pause"
	CauseClientClock = "client-clock"
)

// Lookup finds a fault by name; the error lists the known ones.
func Lookup(name string) (*Fault, error) {
	for _, f := range catalog {
		if f.Name == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown fault %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the known faults.
func Names() []string {
	out := make([]string, 0, len(catalog))
	for _, f := range catalog {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// Describe is a fault's one-line doc; "" for an unknown name.
func Describe(name string) string {
	if f, err := Lookup(name); err == nil {
		return f.Doc
	}
	return ""
}

// Check says whether a run with this topology can inject the fault; the
// error names the fault and the fix.
func (f *Fault) Check(runtime string, replicas int) error {
	if f.Needs.Runtime != "" && runtime != f.Needs.Runtime {
		return fmt.Errorf("the %s fault needs --runtime %s: processes on one loopback interface cannot be cut apart ('make images' builds what it needs)", f.Name, f.Needs.Runtime)
	}
	if replicas < f.Needs.Replicas {
		return fmt.Errorf("the %s fault needs --replicas %d or more: with %d there is no replica to promote or pause", f.Name, f.Needs.Replicas, replicas)
	}
	return nil
}

// MarkOf is the fault mark an event name begins, from every fault's marks
// (the history's vocabulary of fault events); false when the event begins no
// fault. A "failover" observation is a point, blamed on CauseFailover.
func MarkOf(event string) (Mark, bool) {
	m, ok := marks[event]
	return m, ok
}

// Marks lists every fault mark, sorted by event name.
func Marks() []Mark {
	out := make([]Mark, 0, len(marks))
	for _, m := range marks {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out
}

// CauseOf is the cause a fault event (or the failover observation) stands for;
// "unknown" for an event that is neither.
func CauseOf(event string) string {
	if event == history.NFailover {
		return CauseFailover
	}
	if m, ok := marks[event]; ok {
		return m.Cause
	}
	return "unknown"
}

// marks indexes the catalog's marks by event. Faults share events (every
// failover fault logs "kill"), and a shared event must mean the same thing:
// TestMarksAgree holds the catalog to it.
var marks = func() map[string]Mark {
	m := map[string]Mark{}
	for _, f := range catalog {
		for _, k := range f.Marks {
			if _, dup := m[k.Event]; !dup {
				m[k.Event] = k
			}
		}
	}
	return m
}()
