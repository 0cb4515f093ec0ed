package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Fault is one kind of fault as a value, after etcd's failpoints and Jepsen's
// nemeses: it knows its name and doc, what a run needs for it, whether it
// makes Sentinel fail over, the events it writes to the history (each with
// its heal and the cause a violation in force is blamed on), how to plan a
// step, and how to inject it — Inject returns once the fault is healed. To add
// a fault, declare its value beside its inject code in the file of its
// mechanism and name it in the catalog list in faults.go.
type Fault struct {
	Name string
	// As is the mechanism over a target this entry is on its deployments
	// (Targets: kill-leader, pause-one, ...), "" for none: a run given
	// that name on such a deployment injects this entry (Resolve).
	As  string
	Doc string // one line, shown by `run -h`
	// Failover: each injection makes Sentinel promote a replica, so a sweep
	// counts failovers as its opportunities; other faults count injections.
	Failover bool
	// MovesPrimary: each injection moves the lock key to another primary
	// on purpose without a failover (a slot moved to another shard), so
	// the primary the runner watches changes and that is no failover.
	MovesPrimary bool
	Needs        Needs
	// Marks are the events the fault logs, the first one at injection: it
	// anchors the fault on the history's clock.
	Marks []Mark
	// Kind is the deployment-neutral fault it stands for in a comparison
	// of deployments ("failover", "paused-client", "clock-jump"; "" for
	// none), and On the backends where it does (nil: wherever it is
	// available). The sweep maps its per-deployment kinds from these.
	Kind string
	On   []string
	// Cycle is how long one injection and its aftermath take when faults
	// fire back to back on the 2-core machine (from one injection to the
	// next: the fault, its heal, replication settled again, the mean gap),
	// measured with `none` in 1-2 minute sweep trials (docs/sweep.md); the
	// sweep's --dry-run estimates from it. 0: its planned span.
	Cycle time.Duration

	// PlanStep draws the step's parameters from the schedule's generator.
	PlanStep func(rng *rand.Rand, p PlanParams) Step
	// Span is how long the fault and its aftermath (failover, rejoin) occupy.
	Span   func(s Step, p PlanParams) time.Duration
	Inject func(ctx context.Context, env Env, s Step) error
	// Restore undoes what the fault may leave behind when a run ends in the
	// middle of it (Ctrl-C, a time limit): beyond what every run's end
	// resets anyway (paused processes and clients, partitions, clock
	// offsets, killed nodes), nil for most faults.
	Restore func(ctx context.Context, env Env) error
}

// Heal undoes what an interrupted injection of the fault left behind, beyond
// the states every run's end resets.
func (f *Fault) Heal(ctx context.Context, env Env) error {
	if f.Restore == nil {
		return nil
	}
	return f.Restore(ctx, env)
}

// StandsFor lists the catalog's faults of a deployment-neutral kind on a
// backend whose deployment is d: those whose Kind it is, whose On includes
// the backend (or is nil), and that d can inject on the local runtime.
func StandsFor(kind, backend string, d cluster.Deployment) []string {
	var out []string
	for _, f := range catalog {
		if f.Kind != kind || (f.On != nil && !slices.Contains(f.On, backend)) {
			continue
		}
		if f.Available(cluster.Config{Topology: d.Name(), Replicas: 8, MaxMemory: cluster.MinMaxMemory}) == nil {
			out = append(out, f.Name)
		}
	}
	return out
}

// Needs is what a run must have for a fault to be injected.
type Needs struct {
	Replicas int    // replicas in the topology (a failover needs one to promote)
	FakeTime bool   // nodes under libfaketime (the runner turns it on)
	Runtime  string // "" any, else the only runtime that can inject it
	// Topology is what it needs of the deployment (cluster.Deployment's
	// Offers): "" a primary (with Failover, an automatic failover of it),
	// "redlock" Redlock's N independent primaries, "any" for client-side
	// faults, or a deployment's own name.
	Topology string
	// MaxMemory: the nodes run with a memory limit (--maxmemory).
	MaxMemory bool
	// NetProxy: a proxy in front of every node (--net-proxy), which the
	// network faults put their toxics on.
	NetProxy bool
	// DialMap: lock clients that dial through the runner's dial map (every
	// built-in recipe), so that the clients' path and replication's differ.
	// An exec adapter dials what Sentinel hands out, replication's proxy.
	DialMap bool
	// ClientRenews: the recipe's leases are extended by the client's own
	// watchdog, which a client fault can stall; not a library that renews
	// inside itself (valkeylock).
	ClientRenews bool
	// Replies: the reply fault's mode (lock.ReplyDrop, lock.ReplyCancel),
	// "" for none. The recipe must reach replies (lock.Recipe.ReachesReplies:
	// the recipes that speak Valkey through the project's clients, and an exec
	// program that says at init it takes the mode).
	Replies string
	// ClientPartition: the fault cuts some nodes off from some clients in
	// the clients themselves (Redlock's partial partition on loopback): the
	// recipe must take the cut (lock.Recipe.Partitions; an exec program
	// says so at init), or the fault would run without it.
	ClientPartition bool
	// Config is what a deployment's own fault needs of its options (a
	// proxy or pool to pause), nil for none: an error that reads after "the
	// <fault> fault ", naming the fix.
	Config func(c cluster.Config) error
}

// Mark is one fault event of the history (package marks, where the readers
// of a history find it without importing the runtime).
type Mark = marks.Mark

// Causes, from the server-side faults that can make a correct-looking server
// grant a lock twice to the client-side ones that only make a client outlive
// its lease (package marks holds them with their ranks and texts).
const (
	CauseFastRestart  = marks.CauseFastRestart
	CauseReplicaClock = marks.CauseReplicaClock
	CauseFailover     = marks.CauseFailover
	CauseSplitBrain   = marks.CauseSplitBrain
	CauseServerClock  = marks.CauseServerClock
	CauseReplication  = marks.CauseReplication
	CauseClientPause  = marks.CauseClientPause
	CauseClientClock  = marks.CauseClientClock
	// CauseStarvedRenewals: a holder's renewals stalled, its job did not.
	CauseStarvedRenewals = marks.CauseStarvedRenewals
	// CauseReply: an operation's reply dropped or its call cancelled.
	CauseReply     = marks.CauseReply
	CauseDBRestart = marks.CauseDBRestart
)

// Cause is what a violation is blamed on (package marks).
type Cause = marks.Cause

// Held reports whether the fault is held for a time before its heal (a
// pause, a partition, a slowed link), so that a sweep's duration= applies to
// it, or acts at once (a kill, a failover, a clock step). Its plan says: a
// held fault's step carries the duration it draws.
func (f *Fault) Held() bool {
	s := f.PlanStep(rand.New(rand.NewPCG(1, 2)), PlanParams{TTL: 6 * time.Second, DownAfter: 2 * time.Second, Net: DefaultNetSizes})
	return s.Duration > 0
}

// Lookup finds a fault by name; the error lists the known ones.
func Lookup(name string) (*Fault, error) {
	for _, f := range catalog {
		if f.Name == name {
			return f, nil
		}
	}
	var over []string
	for _, t := range Targets {
		over = append(over, t.Name)
	}
	return nil, fmt.Errorf("unknown fault %q (known: %s; over a target, on any deployment that has it: %s)", name, strings.Join(Names(), ", "), strings.Join(over, ", "))
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

// UnofferedError is Available's error for a fault whose kind of node the
// deployment does not have. Hint is the way on, for the run command's
// message: the fault's own counterpart there when it is a mechanism over a
// target, else the targets the deployment has. A sweep's n/a cell gives the
// error alone.
type UnofferedError struct {
	msg  string
	Hint string
}

func (e *UnofferedError) Error() string { return e.msg }

func (f *Fault) unoffered(d cluster.Deployment) error {
	e := &UnofferedError{msg: fmt.Sprintf("the %s fault needs --topology %s (this run uses %s)", f.Name, strings.Join(Offered(f), " or "), d.Name())}
	if c := entryOn(f.As, d); f.As != "" && c != nil {
		e.Hint = fmt.Sprintf("on %s its counterpart is %s (%s)", d.Name(), f.As, c.Name)
	} else if has := targetsOn(d); len(has) > 0 {
		e.Hint = fmt.Sprintf("on %s give a fault over a target, %s", d.Name(), strings.Join(has, ", "))
	}
	return e
}

// Available says whether a run on this cluster (its deployment, runtime,
// replicas and memory limit) can inject the fault; the error names the fault
// and the fix. It is the one check: the runner, the sweep and the docs ask it.
func (f *Fault) Available(c cluster.Config) error {
	d, err := cluster.Lookup(c.Topology)
	if err != nil {
		return err
	}
	if f.Needs.FakeTime {
		if err := d.ClockError(); err != nil {
			return fmt.Errorf("the %s fault is refused on --topology %s: %w", f.Name, d.Name(), err)
		}
	}
	if !d.Offers(f.need()) {
		return f.unoffered(d)
	}
	if f.Needs.MaxMemory && c.MaxMemory == 0 {
		return fmt.Errorf("the %s fault fills the primary past its memory limit: add --maxmemory (e.g. 16mb) and a --maxmemory-policy", f.Name)
	}
	if f.Needs.NetProxy && !d.Offers(cluster.NeedNetProxy) {
		return fmt.Errorf("the %s fault acts on the proxy in front of a Valkey node, and --topology %s has no Valkey nodes to put one in front of", f.Name, d.Name())
	}
	if f.Needs.NetProxy && !c.NetProxy {
		return fmt.Errorf("the %s fault acts on the proxy in front of the primary, and this run has none: add --net-proxy", f.Name)
	}
	if f.Needs.Config != nil {
		if err := f.Needs.Config(c); err != nil {
			return fmt.Errorf("the %s fault %w", f.Name, err)
		}
	}
	return f.check(c.Runtime, c.Replicas)
}

// need is what the fault needs of a deployment: its Needs.Topology, or for
// the faults on "the primary" a primary, failed over automatically when the
// fault waits for a failover.
func (f *Fault) need() string {
	switch {
	case f.Needs.Topology != "":
		return f.Needs.Topology
	case f.Failover:
		return cluster.NeedFailover
	}
	return cluster.NeedPrimary
}

// check is Available's part that needs no deployment: runtime and replicas.
func (f *Fault) check(runtime string, replicas int) error {
	if runtime == "" {
		runtime = cluster.RuntimeLocal
	}
	if f.Needs.Runtime != "" && runtime != f.Needs.Runtime {
		why := "processes on one loopback interface cannot be cut apart ('make images' builds what it needs)"
		if f.Needs.Runtime == cluster.RuntimeLocal {
			why = "it runs valkey-benchmark and Valkey processes of its own on this machine, beside the nodes"
		}
		return fmt.Errorf("the %s fault needs --runtime %s: %s", f.Name, f.Needs.Runtime, why)
	}
	if replicas < f.Needs.Replicas {
		return fmt.Errorf("the %s fault needs --replicas %d or more: with %d there is no replica to promote or pause", f.Name, f.Needs.Replicas, replicas)
	}
	return nil
}

// Catalog is the history's vocabulary of fault events: every fault's marks
// (the built-in ones and those the deployments registered), the windows the
// runner logs from what it observes, and the causes they blame. A program
// that ran these faults hands it to the readers of its histories (the
// checker's Options.Marks, the timeline, the metrics, shrink).
// TestMarksAgree holds it to one meaning per event.
func Catalog() *marks.Catalog {
	var ms []Mark
	for _, f := range catalog {
		ms = append(ms, f.Marks...)
	}
	return marks.NewCatalog(append(ms, observedMarks...), extraCauses)
}

// extraCauses are the causes deployments declare beside their faults.
var extraCauses []Cause

// RegisterCause adds a cause that a fault declared outside this package
// blames (a deployment's own, in its folder); a name registered twice is a
// programming error.
func RegisterCause(c Cause) {
	if _, dup := Catalog().LookupCause(c.Name); dup {
		panic("nemesis: cause " + c.Name + " registered twice")
	}
	extraCauses = append(extraCauses, c)
}

// observedMarks are windows the runner logs from what it observes rather
// than from a fault step: the old primary of a failover no fault drove,
// still serving, is a split brain until Sentinel demotes it.
var observedMarks = []Mark{{Event: history.NStalePrimary, Heal: history.NStalePrimaryDemoted, Cause: CauseSplitBrain}}
