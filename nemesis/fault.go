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
	// Topology is "" for the Sentinel topology, "redlock" for Redlock's N
	// independent primaries, "any" for client-side faults (redlock.go).
	Topology string
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
	CauseFastRestart  = "fast-restart"
	CauseReplicaClock = "replica-clock"
	CauseFailover     = "failover"
	CauseSplitBrain   = "split-brain"
	CauseServerClock  = "server-clock"
	CauseReplication  = "replication"
	CauseClientPause  = "client-pause"
	CauseClientClock  = "client-clock"
	CauseDBRestart    = "db-restart"
)

// Cause is what a violation is blamed on: its rank among causes in force
// together (lower wins: the faults that can make a correct-looking server
// hand a lock out twice before those that only make a client outlive its
// lease), whether it is the client's own doing, and the sentence that tells
// a reader what happened.
type Cause struct {
	Name   string
	Rank   int
	Client bool
	// Text follows "It happened around ..." style; %s is where the faults
	// in force are named.
	Text string
}

var causes = []Cause{
	{CauseFastRestart, 0, false, "It happened around a fast restart%s: the primary came back empty before Sentinel noticed, forgot the first grant and granted again."},
	{CauseReplicaClock, 1, false, "It happened after a failover to a replica whose wall clock ran ahead%s: the lock reached it as an absolute expiry time (SET ... PX travels as PXAT), so on its clock the lease was already over and it granted the lock again."},
	{CauseFailover, 2, false, "It happened around a failover%s: the promoted replica never received the first grant, so it handed the lock out again."},
	{CauseSplitBrain, 3, false, "It happened while a primary was paused or cut off%s: two nodes acted as primary and each granted the lock (split brain)."},
	{CauseServerClock, 4, false, "It happened around a server clock change%s: the server's clock jumped, so the first lease expired early."},
	{CauseReplication, 5, false, "It happened while the replicas were paused%s: writes were acknowledged that no replica had copied."},
	{CauseClientPause, 6, true, "The first client had been paused%s longer than its lease, so its lease expired honestly while it still believed it held the lock."},
	{CauseClientClock, 7, true, "The first client's clock was skewed%s, so it believed its lease lasted longer than it did."},
	{CauseDBRestart, 8, false, "It happened around a restart of the resource's database%s."},
	{CauseNodeRestart, 0, false, "It happened around a node restart%s: the node came back without the lock it had granted (no persistence), so another client found a majority free."},
	{CausePartialPartition, 9, false, "It happened while the clients reached different majorities of the nodes%s."},
	{CauseClientCrash, 10, true, "A client crashed%s in the middle of its lock's life."},
	{CauseMinorityPartition, 9, false, "It happened while a minority of the nodes was cut off from every client%s: the others still formed a majority, so a grant there should have been refused while the first lease lived."},
}

// LookupCause finds a cause by name; false for "none", "unknown" and names
// no fault gives.
func LookupCause(name string) (Cause, bool) {
	for _, c := range causes {
		if c.Name == name {
			return c, true
		}
	}
	return Cause{}, false
}

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
