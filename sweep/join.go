package sweep

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Joined names one sweep folder a joined report was built from.
type Joined struct {
	Dir        string   `json:"dir"`
	Lockjepsen string   `json:"lockjepsen"`
	Aggregated string   `json:"aggregated_at"`
	Cells      []string `json:"cells"`
	// Replaced are the cells of earlier folders that this folder's figures
	// replaced (JoinReplacing); those folders' Cells no longer list them.
	Replaced []string `json:"replaced,omitempty"`
}

// ReadReport reads sweep.json of a sweep folder.
func ReadReport(dir string) (*Report, error) {
	var r Report
	err := runfolder.ReadJSON(filepath.Join(dir, ReportJSON), &r)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s holds no %s (a sweep not yet aggregated? run lockjepsen sweep --resume %s --aggregate): %w", dir, ReportJSON, dir, err)
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Join builds one report in out from the reports (sweep.json) of sweeps that
// measured disjoint parts of one matrix: a row of fault kinds at a time, on
// different days or machines, as a matrix too long for one sitting is
// measured. Where Merge joins the trial folders of shards of one plan, Join
// joins finished figures: a cell's figures are pooled only within its own
// sweep, so every cell must come from exactly one folder. It refuses folders
// whose stopping rule, scenario or seeds differ (their cells would not be
// comparable), a configuration or fault kind defined two ways under one name,
// a cell measured twice (unless replace: see JoinReplacing), and a gap:
// every configuration × fault kind of the union must be in some folder (or
// n/a there). Each sweep's --parallel and --max-trials may differ: every
// cell keeps its own parallelism and its own cap (a cell that stopped at its
// cap says so, MarkCap), and the caveat reads the largest.
func Join(out string, dirs []string) (*Report, error) { return join(out, dirs, false) }

// JoinReplacing is Join where a cell measured in more than one folder is
// taken from the last folder given that holds it: a row re-run to a higher
// cap, or with a newer binary, replaces the old row's cells without
// re-running the old row's cells that already met the rule. The report
// lists each folder's cells and what each replaced (Joined.Replaced).
func JoinReplacing(out string, dirs []string) (*Report, error) { return join(out, dirs, true) }

func join(out string, dirs []string, replace bool) (*Report, error) {
	if len(dirs) == 0 {
		return nil, errors.New("join: no sweep folders given")
	}
	if _, err := os.Stat(filepath.Join(out, ReportJSON)); err == nil {
		return nil, fmt.Errorf("join: %s already holds a report; choose another --out", out)
	}
	j := &joiner{rep: &Report{Lockjepsen: lockjepsenVersion(), Dir: out, Aggregated: time.Now().UTC().Format(time.RFC3339)},
		replace: replace, first: dirs[0], cells: map[string]joinedCell{}, configs: map[string]Config{}}
	for i, d := range dirs {
		if err := j.add(i, d); err != nil {
			return nil, err
		}
	}
	if err := j.lay(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	return j.rep, Publish(out, j.rep)
}

// joiner gathers the folders' cells under one rule, then lays them out as
// one matrix.
type joiner struct {
	rep     *Report
	replace bool
	first   string // the first folder, whose rule the others must share
	rule    Plan
	cells   map[string]joinedCell // config + "\x00" + fault
	configs map[string]Config
}

// joinedCell is a cell and the folder it was taken from.
type joinedCell struct {
	dir  string
	part int // index in rep.Joined
	cs   *CellStats
	na   *NACell
}

// add takes folder d, the i-th given: its plan must share the first one's
// rule and its configurations and faults the earlier ones' definitions.
func (j *joiner) add(i int, d string) error {
	rep := j.rep
	r, err := ReadReport(d)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	p := r.Plan
	if p.Shard != nil {
		return fmt.Errorf("join: %s is shard %d/%d of a sweep: join its shards first with lockjepsen sweep merge", d, p.Shard.Index, p.Shard.Count)
	}
	if i == 0 {
		j.rule = ruleOf(p)
	} else if !reflect.DeepEqual(ruleOf(p), j.rule) {
		return fmt.Errorf("join: %s and %s were measured under different rules (scenario, seed, trials, time limit or stopping rule differ): their cells are not comparable", j.first, d)
	}
	for _, c := range p.Configs {
		if !unite(j.configs, &rep.Plan.Configs, c.Name, c) {
			return fmt.Errorf("join: configuration %q is defined differently in %s than in an earlier folder: rename one", c.Name, d)
		}
	}
	for _, f := range p.Faults {
		if err := uniteFault(&rep.Plan.Faults, f); err != nil {
			return fmt.Errorf("join: fault kind %q is defined differently in %s than in an earlier folder (%w): rename one", f.Name, d, err)
		}
	}
	rep.Joined = append(rep.Joined, Joined{Dir: filepath.Clean(d), Lockjepsen: r.Lockjepsen, Aggregated: r.Aggregated})
	part := &rep.Joined[len(rep.Joined)-1]
	for ci := range r.Cells {
		c := r.Cells[ci]
		// Each cell keeps its own part's cap: reports written before
		// the cap was recorded get it from their plan.
		MarkCap(p, &c)
		if err := j.take(c.Config, c.Fault, joinedCell{dir: d, part: i, cs: &c}); err != nil {
			return err
		}
		part.Cells = append(part.Cells, c.Cell)
	}
	for ni := range r.NotApplicable {
		na := &r.NotApplicable[ni]
		if err := j.take(na.Config, na.Fault, joinedCell{dir: d, part: i, na: na}); err != nil {
			return err
		}
	}
	rep.Pending += r.Pending
	rep.Plan.Parallel = max(rep.Plan.Parallel, p.Parallel)
	rep.Plan.MaxTrials = max(rep.Plan.MaxTrials, p.MaxTrials)
	return nil
}

// take records a cell of the folder being added; one an earlier folder
// measured is refused, or with replace taken from this one (and named so).
func (j *joiner) take(config, fault string, f joinedCell) error {
	k := config + "\x00" + fault
	if prev, dup := j.cells[k]; dup {
		if !j.replace {
			return fmt.Errorf("join: cell %s × %s is in both %s and %s: join only one of them (or --replace: the later folder's figures)", config, fault, prev.dir, f.dir)
		}
		pj := &j.rep.Joined[prev.part]
		if prev.cs != nil {
			pj.Cells = slices.DeleteFunc(pj.Cells, func(c string) bool { return c == prev.cs.Cell })
		}
		part := &j.rep.Joined[f.part]
		part.Replaced = append(part.Replaced, config+"."+fault+" (from "+prev.dir+")")
	}
	j.cells[k] = f
	return nil
}

// lay orders the joined matrix as the default one is (whatever order the
// folders came in: a shell glob sorts them by name, and the joined report
// reads as one sweep) and fills it: every cell from its folder, a gap an
// n/a where the pair has no fault there, else an error naming the sweep
// that would fill it.
func (j *joiner) lay() error {
	rep := j.rep
	byDefault(rep.Plan.Configs, DefaultConfigs, func(c Config) string { return c.Name })
	byDefault(rep.Plan.Faults, DefaultFaults, func(f Fault) string { return f.Name })
	rule := j.rule
	rule.Configs, rule.Faults, rule.Parallel, rule.MaxTrials = rep.Plan.Configs, rep.Plan.Faults, rep.Plan.Parallel, rep.Plan.MaxTrials
	rep.Plan = rule
	for _, c := range rep.Plan.Configs {
		for _, f := range rep.Plan.Faults {
			got, ok := j.cells[c.Name+"\x00"+f.Name]
			switch {
			case !ok:
				if why, na := gapNA(rep.Plan, c, f); na {
					rep.NotApplicable = append(rep.NotApplicable, NACell{Config: c.Name, Fault: f.Name, Reason: why})
					continue
				}
				return fmt.Errorf("join: cell %s × %s is in none of the folders: measure it under the same rule (lockjepsen sweep --configs %s --faults %s ...) and join that folder too", c.Name, f.Name, c.Name, f.Name)
			case got.na != nil:
				rep.NotApplicable = append(rep.NotApplicable, *got.na)
			default:
				rep.Cells = append(rep.Cells, *got.cs)
				rep.Trials += got.cs.Trials
				rep.Failed += got.cs.TrialsFailed
				rep.TrialS += got.cs.WallS
			}
		}
	}
	if n := rep.Trials + rep.Failed; n > 0 {
		rep.MeanTrialS = rep.TrialS / float64(n)
	}
	return nil
}

// gapNA says whether a pair no folder holds is n/a by construction, and
// why: rows measured apart each chose the faults that mean something on
// their deployments (postgres's pg-terminate-holder; the seven older
// deployments were measured before postgres existed), so the pairs across
// them were never a cell. A kind that maps per deployment is asked in
// today's catalog (the older row's kind never heard of the newer
// deployment); a plain fault is asked whether a run could inject it, the
// sweep's own check, and its refusal is the reason. Anything else is a gap
// to measure.
func gapNA(p Plan, c Config, f Fault) (string, bool) {
	backend := p.Backend(c)
	if f.ByBackend != nil {
		kind, err := LookupFault(f.Name)
		var na *NotApplicableError
		if err == nil {
			if _, err := kind.On(backend); errors.As(err, &na) {
				return na.Reason, true
			}
		}
		return "", false
	}
	if _, err := p.RunConfig(Cell{Config: c, Fault: f}, 0, "/nonexistent"); err != nil {
		return err.Error(), true
	}
	return "", false
}

// ruleOf is what must be equal for two sweeps' cells to be comparable: the
// plan without its matrix, its --parallel (each cell records its own), its
// --max-trials (a cell that met the rule below either cap is the same
// measurement; one that stopped at its cap is marked so), its shard and the
// shards' load on their machine (each cell records the trials at once).
func ruleOf(p Plan) Plan {
	p.Configs, p.Faults, p.Parallel, p.MaxTrials, p.Shard, p.HostParallel = nil, nil, 0, 0, nil, 0
	return p
}

// unite adds v to list under name unless seen already holds it; it reports
// false when seen holds another v under that name.
func unite[T any](seen map[string]T, list *[]T, name string, v T) bool {
	prev, ok := seen[name]
	if !ok {
		seen[name] = v
		*list = append(*list, v)
	}
	return !ok || reflect.DeepEqual(prev, v)
}

// uniteFault adds f to list, or merges it into the kind of the same name
// already there: a row measured after a deployment joined the matrix maps a
// kind onto one more deployment (failover gained pg-promote for postgres),
// and that is the same kind wherever both rows map it. It refuses a kind
// whose faults, duration or interval differ, or that maps one deployment two
// ways (including n/a in one row and a fault in the other). The later row's
// note wins: it names every deployment.
func uniteFault(list *[]Fault, f Fault) error {
	i := slices.IndexFunc(*list, func(g Fault) bool { return g.Name == f.Name })
	if i < 0 {
		*list = append(*list, f)
		return nil
	}
	prev := (*list)[i]
	if !slices.Equal(prev.Faults, f.Faults) || prev.Duration != f.Duration || prev.Interval != f.Interval {
		return errors.New("its faults, duration or interval differ")
	}
	merged := prev
	merged.ByBackend = maps.Clone(prev.ByBackend)
	merged.NotOn = maps.Clone(prev.NotOn)
	for b, fs := range f.ByBackend {
		if old, ok := merged.ByBackend[b]; ok && !slices.Equal(old, fs) {
			return fmt.Errorf("on %s it is %v in one row and %v in the other", b, old, fs)
		}
		if why, ok := merged.NotOn[b]; ok {
			return fmt.Errorf("on %s it is %v in one row and n/a (%s) in the other", b, fs, why)
		}
		if merged.ByBackend == nil {
			merged.ByBackend = map[string][]string{}
		}
		merged.ByBackend[b] = fs
	}
	for b, why := range f.NotOn {
		if fs, ok := merged.ByBackend[b]; ok {
			return fmt.Errorf("on %s it is %v in one row and n/a (%s) in the other", b, fs, why)
		}
		if merged.NotOn == nil {
			merged.NotOn = map[string]string{}
		}
		// A reason reworded between rows is the same n/a.
		merged.NotOn[b] = why
	}
	if f.Note != "" {
		merged.Note = f.Note
	}
	(*list)[i] = merged
	return nil
}

// byDefault sorts list stably by each name's place in order; names not in it
// go last, in the order they came.
func byDefault[T any](list []T, order []string, name func(T) string) {
	rank := func(v T) int {
		if i := slices.Index(order, name(v)); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(list, func(a, b T) int { return rank(a) - rank(b) })
}
