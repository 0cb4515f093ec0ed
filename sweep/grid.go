package sweep

import (
	"fmt"
	"sort"
	"strings"
)

// A scoreboard grid: rows the plan's configurations (settings, deployments or
// locks), columns its faults; each cell P(double grant) and P(stale write
// accepted) with their intervals, coloured by the upper bounds, so that a
// reader takes in the table at a glance and reads the sentences after.

// GridBound is the upper bound under which a cell with no hit is green: at
// 4% a cell needs about 90 opportunities without a hit (the sweep's stopping
// rule, --below).
const GridBound = 0.04

// GridCell is one cell of the grid.
type GridCell struct {
	Class   string // ok (no hit, both upper bounds under GridBound), open (no hit yet, bound wider), hit, na, none
	Lock    string // P(double grant): "3/45 = 7% (2–18%)"
	Stale   string // P(stale write accepted)
	Title   string // what a hover shows: opportunities, availability, liveness
	Trial   string // the cell's first trial folder (relative to the sweep), "" when the trials are not at hand
	Shrunk  string // the cell's evidence folder (relative): a violating trial shrunk, "" when there is none
	Cell    string // the cell's id
	Command string // the command that reruns the cell
}

// GridRow is one configuration's cells, in the plan's fault order.
type GridRow struct {
	Config string
	Note   string
	Cells  []GridCell
}

// Grid lays the report out as the scoreboard; trials maps a cell id to its
// trial folders (relative), nil when the trials are not at hand, and shrunk
// a cell id to its evidence folder (relative; sweep evidence writes them).
func Grid(r *Report, trials map[string][]string, shrunk map[string]string) []GridRow {
	var rows []GridRow
	for _, c := range r.Plan.Configs {
		row := GridRow{Config: c.Name, Note: c.Note}
		for _, f := range r.Plan.Faults {
			g := gridCell(r, c, f, trials)
			if g.Cell != "" {
				g.Shrunk = shrunk[g.Cell]
			}
			row.Cells = append(row.Cells, g)
		}
		rows = append(rows, row)
	}
	return rows
}

// at is the report's cell for a configuration and a fault, or the reason
// the pair was not run (both nil: neither).
func (r *Report) at(config, fault string) (*CellStats, *NACell) {
	for i := range r.Cells {
		if r.Cells[i].Config == config && r.Cells[i].Fault == fault {
			return &r.Cells[i], nil
		}
	}
	for i := range r.NotApplicable {
		if na := &r.NotApplicable[i]; na.Config == config && na.Fault == fault {
			return nil, na
		}
	}
	return nil, nil
}

func gridCell(r *Report, c Config, f Fault, trials map[string][]string) GridCell {
	cs, na := r.at(c.Name, f.Name)
	if na != nil {
		return GridCell{Class: "na", Lock: "n/a", Title: na.Reason}
	}
	if cs == nil || cs.Opportunities == 0 {
		return GridCell{Class: "none", Lock: "–", Title: "no opportunity measured"}
	}
	g := GridCell{Cell: cs.Cell,
		Lock:  ratio(cs.Hits, cs.Opportunities, cs.P, cs.PLow, cs.PHi),
		Stale: ratio(cs.StaleHits, cs.Opportunities, cs.PStale, cs.PStaleLow, cs.PStaleHigh)}
	switch {
	case cs.Hits > 0 || cs.StaleHits > 0:
		g.Class = "hit"
	case cs.PHi < GridBound && cs.PStaleHigh < GridBound:
		g.Class = "ok"
	default:
		g.Class = "open"
	}
	parts := []string{fmt.Sprintf("%d %s(s), %d trial(s)", cs.Opportunities, cs.Unit, cs.Trials)}
	if cs.Acquires.Total > 0 {
		parts = append(parts, fmt.Sprintf("availability %.1f%%", 100*cs.Availability))
	}
	if cs.AcquireOKMs.Count > 0 {
		parts = append(parts, fmt.Sprintf("granted acquire p99 %s ms", ms(cs.AcquireOKMs.P99)))
	}
	parts = append(parts, "liveness: "+liveness(cs))
	g.Title = strings.Join(parts, "; ")
	if ds := trials[cs.Cell]; len(ds) > 0 {
		g.Trial = ds[0]
	}
	g.Command = rerunCommand(r.Plan, c, f)
	return g
}

// rerunCommand is the sweep that measures one cell again on its own.
func rerunCommand(p Plan, c Config, f Fault) string {
	args := RerunArgs(p, c, f, max(p.Trials, 1))
	if args == nil {
		return ""
	}
	return "lockjepsen " + ShellJoin(args)
}

// ShellJoin is args as a shell reads them back: an empty one or one with a
// space, ';' or quote in single quotes (a --config alone once read as "the
// default settings and this one": an empty --configs says "this one only").
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " ;'") {
			out[i] = "'" + a + "'"
		}
	}
	return strings.Join(out, " ")
}

// RerunArgs are the arguments of the sweep that runs one cell again on its
// own, trials times; nil for a fault point with parameters (its plan.json
// holds it).
func RerunArgs(p Plan, c Config, f Fault, trials int) []string {
	if _, err := LookupFault(f.Name); err != nil {
		return nil
	}
	args := []string{"sweep", "--scenario", p.Scenario, "--configs", c.Name}
	if _, err := LookupConfig(c.Name); err != nil {
		args = []string{"sweep", "--scenario", p.Scenario, "--configs", "", "--config", c.Spec()}
	}
	return append(args, "--faults", f.Name, "--trials", fmt.Sprint(trials))
}

// Spec is c as --config takes it, NAME=KNOB;KNOB... (ParseConfig's inverse).
func (c Config) Spec() string {
	var k []string
	add := func(name, v string) {
		if v != "" {
			k = append(k, name+"="+v)
		}
	}
	add("topology", c.Topology)
	add("recipe", c.Recipe)
	add("fence", c.Fence)
	add("fence-source", c.FenceSource)
	if c.Nodes > 0 {
		add("nodes", fmt.Sprint(c.Nodes))
	}
	add("wait", c.Wait)
	add("waitaof", c.WaitAOF)
	add("min-replicas", c.MinReplicas)
	if c.AppendOnly {
		k = append(k, "appendonly")
	}
	add("appendfsync", c.AppendFsync)
	if c.Replicas > 0 {
		add("replicas", fmt.Sprint(c.Replicas))
	}
	add("maxmemory", c.MaxMemory)
	add("maxmemory-policy", c.MaxMemoryPolicy)
	keys := make([]string, 0, len(c.Opts))
	for name := range c.Opts {
		keys = append(keys, name)
	}
	sort.Strings(keys)
	for _, name := range keys {
		add(name, c.Opts[name])
	}
	return c.Name + "=" + strings.Join(k, ";")
}
