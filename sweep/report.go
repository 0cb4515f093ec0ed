package sweep

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Finding is one sentence of the report's reading, per fault.
type Finding struct {
	Fault string
	Note  string
	Lines []string
}

// Findings reads the table the way an operator would: for each fault, the
// baseline ("none", or the first configuration) and what every other setting
// does to the probability and the window, at what cost. It states counts and
// intervals, never a bare percentage, because a 0/6 is not a proof.
func Findings(r *Report) []Finding {
	var out []Finding
	for _, f := range r.Plan.Faults {
		fd := Finding{Fault: f.Name, Note: f.Note}
		parallel := 0
		var base *CellStats
		for i := range r.Cells {
			if r.Cells[i].Fault == f.Name && (base == nil || r.Cells[i].Config == "none") {
				base = &r.Cells[i]
			}
		}
		closed, open := []string{}, []string{}
		for i := range r.Cells {
			c := &r.Cells[i]
			if c.Fault != f.Name {
				continue
			}
			s := fmt.Sprintf("%s: %s", c.Config, pText(c))
			if c.ExposureMs.Count > 0 {
				s += fmt.Sprintf("; window p50 %.0f ms, max %.0f ms", c.ExposureMs.P50, c.ExposureMs.Max)
			}
			if c.AcquireOKMs.Count > 0 {
				s += fmt.Sprintf("; granted acquire p50 %.2f ms, p99 %.2f ms", c.AcquireOKMs.P50, c.AcquireOKMs.P99)
				if base != nil && c != base && base.AcquireOKMs.Count > 0 {
					s += fmt.Sprintf(" (%s: %.2f / %.2f)", base.Config, base.AcquireOKMs.P50, base.AcquireOKMs.P99)
				}
			}
			s += fmt.Sprintf("; %.1f%% of acquires refused by errors, %.1f%% timed out", 100*c.RefusedShare, 100*c.UnknownShare)
			if c.Acquires.UnknownRefused > 0 {
				s += fmt.Sprintf(" (%d of them refused by a majority, only their cleanup unconfirmed: availability %.1f%%)",
					c.Acquires.UnknownRefused, 100*c.Availability)
			}
			if c.LivenessMeasured && (c.StuckLocks > 0 || c.RegrantMs.Count > 0 || c.NoRegrant > 0) {
				s += "; liveness: " + liveness(c)
			}
			if c.StaleWrites.Accepted > 0 || c.LostUpdates > 0 || c.Rewinds > 0 {
				s += fmt.Sprintf("; stale writes accepted after %d of %d %ss (%d writes), %d lost updates, %d rewinds",
					c.StaleHits, c.Opportunities, c.Unit, c.StaleWrites.Accepted, c.LostUpdates, c.Rewinds)
			}
			fd.Lines = append(fd.Lines, s)
			parallel = max(parallel, c.Parallel)
			if c.Opportunities > 0 && c.Hits == 0 {
				closed = append(closed, fmt.Sprintf("%s (0 of %d; the true rate may still be up to %.0f%%)", c.Config, c.Opportunities, 100*c.PHi))
			}
			if c.Hits > 0 {
				open = append(open, c.Config)
			}
		}
		if len(open) > 0 {
			fd.Lines = append(fd.Lines, "double grants still seen with: "+strings.Join(open, ", "))
		}
		if len(closed) > 0 {
			fd.Lines = append(fd.Lines, "no double grant seen with: "+strings.Join(closed, ", "))
		}
		if parallel > 1 {
			fd.Lines = append(fd.Lines, ParallelCaveat(parallel))
		}
		out = append(out, fd)
	}
	return out
}

// ParallelCaveat says what trials run side by side do to a sweep's figures,
// with the evidence: on the 2-core machine, none × link-down on seeds 1-3,
// --parallel 1 vs 3 (docs/sweep.md, "Trials at once").
func ParallelCaveat(n int) string {
	return fmt.Sprintf("measured with up to %d trials at a time: the windows and latencies are wider than one trial alone "+
		"would see (2 cores, --parallel 3: window p50 40 → 73 ms, granted acquire p99 2.1 → 5.2 ms); compare them only "+
		"with sweeps at the same --parallel, and take costs from --parallel 1", n)
}

func pText(c *CellStats) string {
	if c.P == nil {
		return fmt.Sprintf("no %s occurred in %d trial(s): nothing measured", c.Unit, c.Trials)
	}
	return fmt.Sprintf("%d of %d %ss granted a lock twice (%.0f%%, 95%% CI %.0f–%.0f%%)%s%s",
		c.Hits, c.Opportunities, c.Unit, 100**c.P, 100*c.PLow, 100*c.PHi, closedText(c), capText(c))
}

// capText says that a cell's interval is wider than its rule asked.
func capText(c *CellStats) string {
	if !c.StoppedAtCap {
		return ""
	}
	return fmt.Sprintf("; stopped at the cap of %d trials short of the stopping rule (run it again with a higher --max-trials)", c.MaxTrials)
}

// closedText says how many of a cell's opportunities the setting closed.
func closedText(c *CellStats) string {
	if c.Closed == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of the %ss closed by the setting (the replication guard refused the grant the fault waited for), %d of them followed by a double grant",
		c.Closed, c.Unit, c.ClosedHits)
}

type page struct {
	R        *Report
	Grid     []GridRow
	Kind     string // what a row of the grid is: replication setting, deployment, lock
	Findings []Finding
	Cells    []cellRow
	Wall     string
	Title    string
	Table    string // the decision table, markdown (table.md)
	Bound    float64
}

type cellRow struct {
	CellStats
	PText      string
	PStaleText string
	Trials     []string
	Refused    string
	Liveness   string
}

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"pct":  func(v float64) float64 { return 100 * v },
	"base": filepath.Base,
	"join": strings.Join,
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>lockjepsen sweep: {{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;line-height:1.45;color:#222}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:right}
td:first-child,th:first-child,td:nth-child(2),th:nth-child(2){text-align:left}
img{max-width:100%;border:1px solid #eee}code{background:#f4f4f4;padding:0 .2em}.muted{color:#666}
table.grid td{text-align:left;vertical-align:top;min-width:11em}table.grid td.ok{background:#dff3df}
table.grid td.open{background:#fdf1d6}table.grid td.hit{background:#f8d7d4}table.grid td.na,table.grid td.none{background:#f2f2f2;color:#777}
table.grid small{display:block;color:#444}table.grid th{text-align:left}
table.grid details{font-size:.85em;color:#444}table.grid summary{cursor:pointer}
</style></head><body>
<h1>{{.Title}}</h1>
<table class="grid"><tr><th>{{.Kind}}</th>{{range .R.Plan.Faults}}<th>{{.Name}}</th>{{end}}</tr>
{{range .Grid}}<tr><th style="text-align:left">{{.Config}}</th>{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}"{{if .Cell}} id="{{.Cell}}"{{end}}>{{.Lock}}{{if .Stale}}<small>stale write accepted: {{.Stale}}</small>{{end}}{{if .Trial}}<small><a href="{{.Trial}}/index.html">a trial</a></small>{{end}}{{if .Shrunk}}<small><a href="{{.Shrunk}}/index.html">the violation, shrunk</a></small>{{end}}{{if .Command}}<details><summary>rerun</summary><code>{{.Command}}</code></details>{{end}}</td>{{end}}</tr>
{{end}}</table>
<p class="muted">Each cell: P(double grant) per opportunity, then P(stale write accepted), with 95% Wilson intervals.
Green: no hit and both upper bounds under {{printf "%.0f" (pct .Bound)}}%; amber: no hit yet, the bound still wider; red: hits.
Hover a cell for its opportunities, availability, latency and liveness; open its “rerun” for the command that measures it again.</p>
<p>Scenario <code>{{.R.Plan.Scenario}}</code>, run {{.R.Trials}} time(s) across {{len .R.Plan.Configs}} {{.Kind}}(s)
× {{len .R.Plan.Faults}} fault kind(s); seeds {{.R.Plan.Seed}}, {{.R.Plan.Seed}}+1, … (trial <i>n</i> of every
cell shares a seed). {{.Wall}}
{{if .R.Failed}}<b>{{.R.Failed}} trial(s) gave no verdict</b> and are left out (see their <code>trial.json</code>).{{end}}
{{if .R.Pending}}<b>{{.R.Pending}} planned trial(s) have not run</b>: <code>lockjepsen sweep --resume {{.R.Dir}}</code> finishes them.{{end}}</p>

<h2>Reading</h2>
{{range .Findings}}<h3>{{.Fault}}</h3><p class="muted">{{.Note}}</p><ul>{{range .Lines}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p>A double grant is the lock service handing one lock to two clients at once (the checker's lock verdict), not a
client that overslept its lease. P is counted per failover (per injected fault for kinds that cause none): a failover
that produced two double grants counts once. An interval that reaches far above 0 with 0 hits means “not seen”, not
“closed”: run more trials (<code>--min-failovers</code>).</p>

<h2>Safety: the lock, then the data</h2>
<p class="muted">Above, how often the lock service granted a lock twice; below, how often a stale write reached the
resource: a double grant that the fence caught corrupted nothing, a stale write that got through did.</p>
<img src="probability.png" alt="double grant probability per configuration">
<img src="data.png" alt="stale write accepted probability per configuration">
<h2>Cost against safety</h2>
<p class="muted">One point a cell: P(double grant) along x, against the p99 of granted acquires and the share of
acquires a working lock answered. A setting worth its cost sits to the left; one that pays latency or availability
for nothing sits to the right.</p>
<img src="tradeoff.png" alt="p99 latency and availability against double grant probability, one point a cell">
<h2>The window</h2>
<img src="exposure.png" alt="exposure window distribution">
<h2>Cost beside safety, per configuration</h2>
<img src="cost.png" alt="probability, latency and refusals per configuration">

<h2>Table</h2>
<table><tr><th>configuration</th><th>fault (nemesis)</th><th>trials</th><th>opportunities</th><th>double grants</th><th>P(double grant) (95% CI)</th>
<th>P(stale write accepted) (95% CI)</th>
<th>window p50 / p99 / max ms</th><th>granted acquire p50 / p99 ms</th><th>availability</th><th>refused by error</th><th>timed out</th>
<th>stale writes rejected / accepted</th><th>liveness: stuck locks, regranted p50 / p99 after a fault</th><th>trial folders</th></tr>
{{range .Cells}}<tr><td>{{.Config}}</td><td>{{.Fault}} ({{join .NemesisKind ", "}})</td><td>{{.CellStats.Trials}}{{if .TrialsFailed}} (+{{.TrialsFailed}} failed){{end}}{{if .StoppedAtCap}}, stopped at the cap of {{.MaxTrials}} short of the rule{{end}}</td>
<td>{{.Opportunities}} {{.Unit}}(s)</td><td>{{.DoubleGrants}}</td><td>{{.PText}}</td><td>{{.PStaleText}}</td>
<td>{{printf "%.0f / %.0f / %.0f" .ExposureMs.P50 .ExposureMs.P99 .ExposureMs.Max}}</td>
<td>{{printf "%.2f / %.2f" .AcquireOKMs.P50 .AcquireOKMs.P99}}</td><td>{{printf "%.1f%%" (pct .Availability)}}</td><td>{{.Refused}}</td><td>{{printf "%.1f%%" (pct .UnknownShare)}}</td>
<td>{{.StaleWrites.Rejected}} / {{.StaleWrites.Accepted}}</td><td>{{.Liveness}}</td>
<td>{{range .Trials}}<a href="{{.}}/index.html">{{base .}}</a> {{end}}</td></tr>
{{end}}{{range .R.NotApplicable}}<tr><td>{{.Config}}</td><td>{{.Fault}}</td><td colspan="13" style="text-align:left">n/a: {{.Reason}}</td></tr>
{{end}}</table>
<p class="muted">The decision table (<a href="table.md">table.md</a>, markdown, for a README):</p>
<pre>{{.Table}}</pre>
{{if .R.Joined}}<p class="muted">The same figures are in <a href="sweep.json">sweep.json</a> and <a href="sweep.csv">sweep.csv</a>.
This report joins the reports of {{len .R.Joined}} sweep folder(s), each cell taken whole from one of them
(<code>lockjepsen sweep join</code>):{{range .R.Joined}} <code>{{.Dir}}</code> ({{len .Cells}} cell(s), aggregated {{.Aggregated}}{{if .Replaced}}; replacing {{join .Replaced ", "}}{{end}});{{end}}
each one's figures are recomputed from its own trial folders by <code>lockjepsen sweep --resume DIR --aggregate</code>.
Method: docs/sweep.md.</p>
{{else}}<p class="muted">The same figures are in <a href="sweep.json">sweep.json</a> and <a href="sweep.csv">sweep.csv</a>; the
plan in <a href="plan.json">plan.json</a>. Every figure is recomputed from the trial folders by
<code>lockjepsen sweep --resume {{.R.Dir}} --aggregate</code>. Method: docs/sweep.md.</p>
{{end}}
</body></html>
`))

// WriteReport writes the plots and index.html of a sweep.
func WriteReport(dir string, r *Report) error {
	if err := WritePlots(dir, r); err != nil {
		return err
	}
	b, err := RenderIndex(dir, r)
	if err != nil {
		return err
	}
	return runfolder.WriteAtomic(filepath.Join(dir, runfolder.Index), 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// RenderIndex is a sweep's index.html from its report alone (and the trial
// folders under dir, linked when they are there): what the docs generator
// writes for every committed row, whose trials are not committed.
func RenderIndex(dir string, r *Report) ([]byte, error) { return RenderIndexLinking(dir, r, nil) }

// RenderIndexLinking is RenderIndex linking only the trial folders linked
// says to (nil: every one on disk). The docs generator links the committed
// ones: a row's trials kept on the machine that ran it (ignored by git)
// would make its page differ between that checkout and a fresh clone.
func RenderIndexLinking(dir string, r *Report, linked func(trialDir string) bool) ([]byte, error) {
	pg := page{R: r, Findings: Findings(r), Table: DecisionTable(r),
		Title: "How much do WAIT, WAITAOF and min-replicas-to-write shrink the window?"}
	pg.Kind, pg.Bound = "replication setting", GridBound
	if r.Plan.HasDeployments() {
		pg.Title = "The safe alternatives, measured: one workload, the same faults, every deployment"
		pg.Kind = "deployment"
		if r.Plan.HasLibraries() {
			pg.Title = "Every lock on one scoreboard: the same workload and faults, each library driven unchanged"
			pg.Kind = "lock"
		}
	}
	if r.TrialS > 0 {
		pg.Wall = fmt.Sprintf("The trials took %.1f minutes of wall time in all (%.0f s each on average).", r.TrialS/60, r.MeanTrialS)
	}
	if r.SpanS > 0 {
		pg.Wall += fmt.Sprintf(" From the first trial's start to the last one's end: %.1f minutes, %.1f trials at once on average, %.1f opportunities a minute.",
			r.SpanS/60, r.TrialS/r.SpanS, r.PerMinute)
	}
	trials := map[string][]string{}
	for _, c := range r.Cells {
		row := cellRow{CellStats: c, PText: ratio(c.Hits, c.Opportunities, c.P, c.PLow, c.PHi),
			PStaleText: ratio(c.StaleHits, c.Opportunities, c.PStale, c.PStaleLow, c.PStaleHigh)}
		row.Refused = fmt.Sprintf("%.1f%%", 100*c.RefusedShare)
		row.Liveness = liveness(&c)
		if len(c.Acquires.RefusedBy) > 0 {
			var parts []string
			for _, k := range []string{"noreplicas", "wait", "waitaof", "readonly", "unreachable", "other"} {
				if v := c.Acquires.RefusedBy[k]; v > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", k, v))
				}
			}
			if len(parts) > 0 {
				row.Refused += " (" + strings.Join(parts, ", ") + ")"
			}
		}
		cell, _ := r.Plan.Cell(c.Cell)
		dirs, err := TrialDirs(dir, cell)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			if linked != nil && !linked(d) {
				continue
			}
			rel, err := filepath.Rel(dir, d)
			if err == nil {
				row.Trials = append(row.Trials, rel)
			}
		}
		pg.Cells = append(pg.Cells, row)
		trials[c.Cell] = row.Trials
	}
	pg.Grid = Grid(r, trials, evidenceLinks(dir, r, linked))
	var b bytes.Buffer
	if err := indexTmpl.Execute(&b, pg); err != nil {
		return nil, fmt.Errorf("render %s's index.html: %w", dir, err)
	}
	return b.Bytes(), nil
}

// evidenceLinks maps each cell to its evidence folder, relative to dir: in
// dir's own evidence/, or, for a joined report, in the evidence/ of the row
// folder the cell was taken from (a row's evidence serves every report that
// joins it). A joined part's Dir is as the join was given it, from the
// repository's root.
func evidenceLinks(dir string, r *Report, linked func(string) bool) map[string]string {
	from := map[string]string{}
	if root := moduleRoot(dir); root != "" {
		for _, j := range r.Joined {
			part := j.Dir
			if !filepath.IsAbs(part) {
				part = filepath.Join(root, part)
			}
			for _, c := range j.Cells {
				from[c] = part
			}
		}
	}
	out := map[string]string{}
	for _, c := range r.Cells {
		for _, base := range []string{dir, from[c.Cell]} {
			if base == "" {
				continue
			}
			ev := EvidenceDir(base, c.Cell)
			if _, err := os.Stat(filepath.Join(ev, runfolder.Index)); err != nil || (linked != nil && !linked(ev)) {
				continue
			}
			if rel, err := relative(dir, ev); err == nil {
				out[c.Cell] = filepath.ToSlash(rel)
				break
			}
		}
	}
	return out
}

// moduleRoot is the nearest folder above dir that holds go.mod, "" when none.
func moduleRoot(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// relative is target's path from dir, either of them absolute or relative
// to the working directory.
func relative(dir, target string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	t, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	return filepath.Rel(d, t)
}
