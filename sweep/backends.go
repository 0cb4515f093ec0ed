package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// How the fault axis maps onto each backend: a kind of fault (failover,
// paused-client, clock-jump) is one nemesis fault per deployment.

// The backends a fault kind maps onto: the deployments that join the
// comparison, and each recipe whose lock lives in the resource's database
// (sql-lease; lock.Recipe.InResource), whose faults act on the database,
// not on the Valkey nodes of the default deployment started beside it.

// Backends lists them in the order the mapping table reads: every
// deployment that joins the comparison (cluster.Compared: it declares its
// rows), by rank, the database's leases right after the default deployment
// whose nodes they run beside.
var Backends = func() []string {
	bs := comparedBackends()
	at := slices.Index(bs, cluster.DefaultTopology()) + 1
	for _, r := range inResource() {
		bs = slices.Insert(bs, at, r.Name)
		at++
	}
	return bs
}()

// inResource lists the recipes that are a lock service of their own, in
// the resource's database.
func inResource() []lock.Recipe {
	var out []lock.Recipe
	for _, r := range lock.Recipes() {
		if r.InResource {
			out = append(out, r)
		}
	}
	return out
}

// isInResource says whether backend b is such a recipe rather than a
// deployment.
func isInResource(b string) bool {
	r, err := lock.Lookup(b)
	return err == nil && r.InResource
}

func comparedBackends() []string {
	var out []string
	for _, name := range cluster.Topologies {
		if d, _ := cluster.Lookup(name); d != nil {
			if _, ok := d.(cluster.Compared); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// rowsOf are backend b's rows in the comparison: a lease recipe's one row,
// on the default deployment's nodes and fenced by its own counter, or the
// rows a deployment declares.
func rowsOf(b string) []Config {
	if r, err := lock.Lookup(b); err == nil && r.InResource {
		return []Config{{Name: r.Name, Topology: cluster.DefaultTopology(), Recipe: r.Name, Fence: knob.FenceReadWrite, Note: r.Compared.Note}}
	}
	var out []Config
	if d, err := cluster.Lookup(b); err == nil {
		for _, c := range d.(cluster.Compared).Comparisons() {
			out = append(out, Config{Name: c.Name, Topology: b, Recipe: c.Recipe, Fence: c.Fence, FenceSource: c.FenceSource, Opts: c.Opts, Note: c.Note})
		}
	}
	return out
}

// clockNotOn says, for each backend that has no clock jump (its servers'
// clocks cannot be moved, or no clock fault acts on them), why clock-jump
// has no counterpart there.
func clockNotOn() map[string]string {
	m := map[string]string{}
	for _, name := range comparedBackends() {
		d, _ := cluster.Lookup(name)
		if err := d.ClockError(); err != nil {
			m[name] = err.Error()
		}
		for _, c := range d.(cluster.Compared).Comparisons() {
			if c.ClockNA != "" {
				m[name] = c.ClockNA
			}
		}
	}
	for _, r := range inResource() {
		m[r.Name] = r.Compared.ClockNA
	}
	return m
}

// Backend is what a fault kind maps onto for configuration c: its topology
// (else the scenario's, else the default deployment), or its recipe (else
// the scenario's) when that is the database's own lease.
func (p Plan) Backend(c Config) string {
	sc, _ := scenario.Get(p.Scenario)
	recipe, topo := sc.Recipe, sc.Topology
	if c.Recipe != "" {
		recipe = c.Recipe
	}
	if c.Topology != "" {
		topo = c.Topology
	}
	if r, err := lock.Lookup(recipe); err == nil && r.InResource {
		return r.Name // the database is the lock service
	}
	if topo == "" {
		return cluster.DefaultTopology()
	}
	return topo
}

// NotApplicableError says that a fault kind has no counterpart on a backend.
type NotApplicableError struct {
	Fault, Backend, Reason string
}

func (e *NotApplicableError) Error() string {
	return fmt.Sprintf("fault %s is n/a on %s: %s", e.Fault, e.Backend, e.Reason)
}

// On is the fault axis point as it runs on a backend: itself for a point
// that does not map per deployment, else its ByBackend faults for that
// backend; a *NotApplicableError for a backend in NotOn, and an error naming
// the backends it knows for any other. A fault over a target (kill-leader)
// becomes the backend's entry for it, n/a where the backend has no such
// target, so that one sweep puts the same fault to every deployment.
func (f Fault) On(backend string) (Fault, error) {
	if f.ByBackend == nil {
		return f.targetsOn(backend)
	}
	if reason, ok := f.NotOn[backend]; ok {
		return Fault{}, &NotApplicableError{Fault: f.Name, Backend: backend, Reason: reason}
	}
	fs, ok := f.ByBackend[backend]
	if !ok {
		var known []string
		for _, b := range Backends {
			if _, ok := f.ByBackend[b]; ok {
				known = append(known, b)
			}
		}
		return Fault{}, fmt.Errorf("fault %s has no meaning on a %s deployment (it maps onto %s)", f.Name, backend, strings.Join(known, ", "))
	}
	g := f
	g.Faults = append([]string(nil), fs...)
	g.ByBackend, g.NotOn = nil, nil
	return g.targetsOn(backend)
}

// targetsOn resolves the point's faults over a target on backend; an entry's
// own name stays, and a name the nemesis does not know is left to Validate,
// which names it.
func (f Fault) targetsOn(backend string) (Fault, error) {
	var out []string
	for _, n := range f.Faults {
		if _, err := nemesis.Lookup(n); err == nil || nemesis.Known(n) != nil {
			out = append(out, n)
			continue
		}
		r, err := nemesis.Resolve(n, backend)
		var nt *nemesis.NoTargetError
		switch {
		case errors.As(err, &nt) && len(nt.Has) > 0:
			return Fault{}, &NotApplicableError{Fault: f.Name, Backend: backend, Reason: "no node there that " + n + " acts on (its targets: " + strings.Join(nt.Has, ", ") + ")"}
		case err != nil:
			// The SQL lease's lock lives in its database, not on a node of
			// the topology: no target of the deployment's holds it.
			return Fault{}, &NotApplicableError{Fault: f.Name, Backend: backend, Reason: "no node there that " + n + " acts on: the lock is a row of the resource's database"}
		}
		out = append(out, r)
	}
	g := f
	g.Faults = out
	return g, nil
}
