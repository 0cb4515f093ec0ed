package sweep

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// From what a user types (--configs, --faults, a sweep file) to the
// points of the axes, each name and value checked.

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_+-]*$`)

// LookupConfig finds a catalog setting; a name joined with '+' combines
// catalog settings (wait-1-100ms+fsync-always), later ones overriding the
// knobs they set.
func LookupConfig(name string) (Config, error) {
	out := Config{Name: name}
	var notes []string
	for _, part := range strings.Split(name, "+") {
		var c *Config
		for _, cat := range [][]Config{Catalog, Deployments} {
			for i := range cat {
				if cat[i].Name == part {
					c = &cat[i]
				}
			}
		}
		if c == nil {
			return Config{}, fmt.Errorf("unknown configuration %q (known: %s; combine with '+', or define one with --config NAME=KNOB,...)", part, strings.Join(configNames(), ", "))
		}
		merge(&out, *c)
		if c.Name != "none" {
			notes = append(notes, c.Note)
		}
	}
	out.Note = strings.Join(notes, "; ")
	if out.Note == "" {
		out.Note = Catalog[0].Note
	}
	return out, nil
}

func merge(dst *Config, src Config) {
	over(&dst.Topology, src.Topology)
	over(&dst.Recipe, src.Recipe)
	over(&dst.Fence, src.Fence)
	over(&dst.FenceSource, src.FenceSource)
	over(&dst.Nodes, src.Nodes)
	over(&dst.Wait, src.Wait)
	over(&dst.WaitAOF, src.WaitAOF)
	over(&dst.MinReplicas, src.MinReplicas)
	over(&dst.AppendOnly, src.AppendOnly)
	over(&dst.AppendFsync, src.AppendFsync)
	over(&dst.Replicas, src.Replicas)
	over(&dst.MaxMemory, src.MaxMemory)
	over(&dst.MaxMemoryPolicy, src.MaxMemoryPolicy)
	for k, v := range src.Opts {
		dst.setOpt(k, v)
	}
}

func (c *Config) setOpt(k, v string) {
	if c.Opts == nil {
		c.Opts = map[string]string{}
	}
	c.Opts[k] = v
}

// deploymentFlag reports whether name is a flag some deployment owns
// (cluster.FlagOwner), which a configuration sets as a knob: NAME=VALUE.
func deploymentFlag(name string) bool {
	_, owned := cluster.FlagOwners()[name]
	return owned
}

// over sets *dst to v when v is set: a later setting of a '+' combination
// overrides only the knobs it names (appendonly cannot be turned back off).
func over[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

func configNames() []string {
	var out []string
	for _, c := range append(append([]Config(nil), Catalog...), Deployments...) {
		out = append(out, c.Name)
	}
	return out
}

// ParseConfig reads a user-defined setting, NAME=KNOB;KNOB...: knobs are
// wait=1:100ms, waitaof=1:1:100ms, min-replicas=1:10, appendonly,
// appendfsync=always, replicas=3, topology=redlock, recipe=redsync,
// fence=write, fence-source=resource, nodes=7, maxmemory=16mb,
// maxmemory-policy=volatile-lru (the values as `lockjepsen run`
// takes them, checked by runner.Config.Validate), or the name of a catalog
// setting or deployment to start from. Semicolons separate knobs because the values use colons and the
// --configs list uses commas.
func ParseConfig(s string) (Config, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok || !nameRE.MatchString(name) {
		return Config{}, fmt.Errorf("--config %q: want NAME=KNOB;KNOB..., e.g. strict=wait=1:100ms;appendonly;appendfsync=always", s)
	}
	c := Config{Name: name}
	// The knobs that take a value, each pointing at its field.
	texts := map[string]*string{"wait": &c.Wait, "waitaof": &c.WaitAOF, "min-replicas": &c.MinReplicas,
		"appendfsync": &c.AppendFsync, "topology": &c.Topology, "recipe": &c.Recipe, "fence": &c.Fence,
		"fence-source": &c.FenceSource, "maxmemory": &c.MaxMemory, "maxmemory-policy": &c.MaxMemoryPolicy}
	counts := map[string]*int{"replicas": &c.Replicas, "nodes": &c.Nodes}
	for _, k := range strings.Split(spec, ";") {
		k = strings.TrimSpace(k)
		key, val, _ := strings.Cut(k, "=")
		switch {
		case key == "":
		case key == "appendonly":
			c.AppendOnly = val == "" || val == "yes" || val == "true"
		case texts[key] != nil:
			*texts[key] = val
		case counts[key] != nil:
			n, err := strconv.Atoi(val)
			if err != nil {
				return Config{}, fmt.Errorf("--config %q: %s=%q is not a number", s, key, val)
			}
			*counts[key] = n
		case deploymentFlag(key):
			// A deployment's own flag, applied as its --NAME takes it.
			c.setOpt(key, val)
		default:
			base, err := LookupConfig(k)
			if err != nil {
				return Config{}, fmt.Errorf("--config %q: knob %q: want wait=, waitaof=, min-replicas=, appendonly, appendfsync=, replicas=, topology=, recipe=, fence=, fence-source=, nodes=, maxmemory=, maxmemory-policy=, a deployment's own flag (NAME=VALUE, as its --NAME takes) or a known configuration", s, k)
			}
			merge(&c, base)
		}
	}
	return c, nil
}

// LookupFault finds a catalog fault, or takes a nemesis fault name as is; a
// suffix sets parameters: split-brain:duration=4s:interval=8s.
func LookupFault(s string) (Fault, error) {
	parts := strings.Split(s, ":")
	var f Fault
	found := false
	for _, c := range FaultCatalog {
		if c.Name == parts[0] {
			f, found = c, true
		}
	}
	if !found {
		if !nameRE.MatchString(parts[0]) {
			return Fault{}, fmt.Errorf("fault %q: bad name", s)
		}
		// A nemesis fault by its own name; Validate finds out if it exists.
		f = Fault{Name: parts[0], Faults: []string{parts[0]}}
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		d, err := time.ParseDuration(v)
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: %s=%q is not a duration", s, k, v)
		}
		// A duration for a fault that acts at once (a kill, a failover)
		// would be dropped without a word: the trial would run the fault's
		// own and the plan would name it as if the duration applied.
		if k == "duration" {
			if err := f.takesDuration(); err != nil {
				return Fault{}, fmt.Errorf("fault %q: duration=%s: %w; leave duration= out (interval= sets the gap between faults)", s, v, err)
			}
		}
		// Refused here, before the plan names a fault "link-down-d-4s" and
		// the sweep starts trials that would each fail or run no fault.
		if d <= 0 && (k == "duration" || k == "interval") {
			return Fault{}, fmt.Errorf("fault %q: %s=%s: want a duration above 0, e.g. %s:%s=4s", s, k, v, parts[0], k)
		}
		switch k {
		case "duration":
			f.Duration = Duration(d)
		case "interval":
			f.Interval = Duration(d)
		default:
			return Fault{}, fmt.Errorf("fault %q: parameter %q: want duration= or interval=", s, k)
		}
		f.Name += "-" + k[:1] + strings.ReplaceAll(v, ".", "_")
	}
	return f, nil
}

// takesDuration says why a duration cannot apply to f: none of its
// nemesis faults is held for a time (Fault.Held). A name the nemesis does
// not know is left to Validate, which names it.
func (f Fault) takesDuration() error {
	names := slices.Clone(f.Faults)
	for _, ns := range f.ByBackend {
		names = append(names, ns...)
	}
	for _, n := range names {
		entries := nemesis.EntriesOf(n)
		if len(entries) == 0 {
			return nil
		}
		for _, nf := range entries {
			if nf.Held() {
				return nil
			}
		}
	}
	return fmt.Errorf("%s acts at once and is held for no time", strings.Join(names, ", "))
}
