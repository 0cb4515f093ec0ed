package nemesis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// A fault over a target, after Jepsen's combined nemesis (its kill, pause,
// partition and clock faults over the primaries, one node, a minority): the
// same mechanism on every deployment that has the target answers to one name.
// A user who asks what killing the leader does to each lock service gives
// --faults kill-leader on each; the run resolves the name on its topology to the entry of that deployment (Fault.As), with that
// deployment's timing, and records the entry's own name in its schedule and
// history, so that a rerun and the committed results read as before. Every
// entry's own name stays valid.

// Targeted is one mechanism over one target: the name a user gives and what
// it does on every deployment that has the target.
type Targeted struct {
	Name, Doc string
}

// Targets are the mechanism-over-target names, in the order the docs list
// them. A minority's partition is not among them: Redlock's
// partition-minority is the only one, under that name already. Nor is the
// holder: the faults on a lock's holder (kill-holder, pause-client,
// starve-renewals, cancel-acquire, cancel-release, drop-release-reply) act on
// the client process, one entry each that runs on every deployment.
var Targets = []Targeted{
	{"kill-leader", "SIGKILL the node that takes the lock's writes (Sentinel's primary, the lock key's shard primary, the Raft " +
		"or Zab leader): another is promoted or elected, the old one rejoins as a follower"},
	{"pause-leader", "SIGSTOP that node past the failure detector's timeout, then SIGCONT: another took over meanwhile, and " +
		"the old one serves or steps down depending on the deployment"},
	{"partition-leader", "cut that node off from the other nodes while clients still reach it (docker runtime), then heal"},
	{"clock-bump-leader", "move that node's wall clock forward past the TTL (libfaketime), then back"},
	{"kill-one", "SIGKILL one of N independent nodes and restart it: a minority down"},
	{"pause-one", "SIGSTOP one of N independent nodes for a while, then SIGCONT"},
	{"clock-bump-one", "move one of N independent nodes' wall clock forward past the TTL (libfaketime)"},
}

func isTarget(name string) bool {
	return slices.ContainsFunc(Targets, func(t Targeted) bool { return t.Name == name })
}

// Known says whether name is a fault a run can be given (an entry, or a
// mechanism over a target, which Resolve maps on the run's topology); the
// error lists both.
func Known(name string) error {
	if isTarget(name) {
		return nil
	}
	_, err := Lookup(name)
	return err
}

// NoTargetError is Resolve's error for a mechanism over a target that the
// deployment does not have (no leader among independent nodes, no
// independent nodes behind one leader): a sweep shows the pair as n/a, a run
// refuses it.
type NoTargetError struct {
	msg string
	// Has lists the targets the deployment has, each as "target (entry)".
	Has []string
}

func (e *NoTargetError) Error() string { return e.msg }

// Resolve maps a fault name on a topology to the catalog entry a run injects:
// an entry's own name is itself; a mechanism over a target is the entry on
// that deployment that answers to it. The error names the deployments that
// have it and the targeted faults this one has.
func Resolve(name, topology string) (string, error) {
	if !isTarget(name) {
		if _, err := Lookup(name); err != nil {
			return "", err
		}
		return name, nil
	}
	d, err := cluster.Lookup(topology)
	if err != nil {
		return "", err
	}
	if f := entryOn(name, d); f != nil {
		return f.Name, nil
	}
	var where, here []string
	seen := map[*Fault]bool{}
	for _, o := range cluster.Topologies {
		od, _ := cluster.Lookup(o)
		if f := entryOn(name, od); f != nil && !seen[f] {
			seen[f] = true
			where = append(where, fmt.Sprintf("%s on %s", f.Name, strings.Join(Offered(f), ", ")))
		}
	}
	here = targetsOn(d)
	msg := fmt.Sprintf("the %s fault has no target on --topology %s: it is %s", name, d.Name(), strings.Join(where, "; "))
	if len(here) > 0 {
		msg += "; on " + d.Name() + " give " + strings.Join(here, ", ")
	}
	return "", &NoTargetError{msg: msg, Has: here}
}

// targetsOn lists the targets d has, each as "target (entry)", the
// clock's only where d's clocks can be moved.
func targetsOn(d cluster.Deployment) []string {
	var out []string
	for _, t := range Targets {
		if f := entryOn(t.Name, d); f != nil && (!f.Needs.FakeTime || d.ClockError() == nil) {
			out = append(out, fmt.Sprintf("%s (%s)", t.Name, f.Name))
		}
	}
	return out
}

// entryOn is the catalog's entry for the target on d, nil for none.
func entryOn(target string, d cluster.Deployment) *Fault {
	for _, f := range catalog {
		if f.As == target && d.Offers(f.need()) {
			return f
		}
	}
	return nil
}

// Offered lists the deployments whose kind of node the fault acts on (its
// Needs.Topology, or a primary), in cluster.Topologies' order; the runtime,
// replicas and options it may need besides are Available's to check.
func Offered(f *Fault) []string {
	var out []string
	for _, name := range cluster.Topologies {
		if d, err := cluster.Lookup(name); err == nil && d.Offers(f.need()) {
			out = append(out, name)
		}
	}
	return out
}

// EntriesOf lists the entries a fault name may run: the entry itself, or
// every deployment's entry for a target; none for an unknown name.
func EntriesOf(name string) []*Fault {
	if f, err := Lookup(name); err == nil {
		return []*Fault{f}
	}
	var out []*Fault
	for _, f := range catalog {
		if f.As == name {
			out = append(out, f)
		}
	}
	return out
}
