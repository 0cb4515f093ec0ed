package report

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// The sources the summary and the report cite, by their titles.
const (
	// ArticleTitle is the Valkey 9 lock article: SET NX PX, SET IFEQ,
	// DELIFEQ, the fenced UPDATE, and the remark that a number the database
	// issues is stronger than one kept on Valkey.
	ArticleTitle = "Distributed Locks on Valkey 9 Without Lua: SET IFEQ and DELIFEQ"
	// NoteTitle is the note that sets a single primary's SET NX EX against
	// Redlock's majority of independent primaries, and says why Redlock has
	// no fencing counter.
	NoteTitle = "Redis SET NX EX vs Redlock"
)

// Page is what index.html shows.
type Page struct {
	Title    string
	Scenario string
	Teaches  string
	Summary  string
	Result   *checker.Result
	Config   string // config.json, pretty
	Rerun    string // the command line that made the run, quoted for a shell
	Files    []string
	// First holds the first violation of each kind; Counts says how many of
	// each there are. A failover that hands a lock out a hundred times is one
	// story, told once, with the full list one click away.
	First  []checker.Violation
	Counts string
	// The summary's three sentences: who held, who wrote, who was turned
	// away and why.
	Held, Wrote, TurnedAway string
}

var (
	nsLine  = regexp.MustCompile(`(?m)^(\s*)"([a-z_]+)_ns": (\d+)(,?)$`)
	msLine  = regexp.MustCompile(`(?m)^(\s*)"([a-z_]+)_ms": (\d+)(,?)$`)
	durLine = regexp.MustCompile(`(?m)^(\s*)"(DownAfter|FailoverTimeout)": (\d+)(,?)$`)
)

// humanConfig rewrites config.json's durations for people: "ttl_ns":
// 6000000000 reads "ttl": "6 s". config.json keeps the exact values.
func humanConfig(cfg string) string {
	rw := func(re *regexp.Regexp, unit float64, suffix bool) {
		cfg = re.ReplaceAllStringFunc(cfg, func(line string) string {
			m := re.FindStringSubmatch(line)
			n, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return line
			}
			key := m[2]
			if !suffix {
				key = m[2]
			}
			v := "0"
			if n != 0 {
				v = checker.HumanDuration(n * unit)
			}
			return fmt.Sprintf(`%s"%s": "%s"%s`, m[1], key, v, m[4])
		})
	}
	rw(nsLine, 1e-6, true)
	rw(msLine, 1, true)
	rw(durLine, 1e-6, false)
	return cfg
}

func msWord(ms float64) string { return checker.HumanDuration(ms) }

func (p *Page) digest() {
	p.Held, p.Wrote, p.TurnedAway = story(p.Result)
	p.Config = humanConfig(p.Config)
	counts := map[string]int{}
	var kinds []string
	for _, v := range p.Result.Violations {
		if counts[v.Kind] == 0 {
			kinds = append(kinds, v.Kind)
			p.First = append(p.First, v)
		}
		counts[v.Kind]++
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	p.Counts = strings.Join(parts, ", ")
}

func verdictWord(v checker.Validity) string {
	switch v {
	case checker.Valid:
		return "valid"
	case checker.Invalid:
		return "INVALID"
	}
	return "unknown"
}

func verdictClass(v checker.Validity) string {
	switch v {
	case checker.Valid:
		return "ok"
	case checker.Invalid:
		return "bad"
	}
	return "unk"
}

var funcs = template.FuncMap{"word": verdictWord, "cls": verdictClass, "join": strings.Join, "clients": checker.ClientList, "ms": msWord,
	"article": func() string { return ArticleTitle }, "note": func() string { return NoteTitle }}

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em} .ok{color:#0a7d32} .bad{color:#c62828} .unk{color:#b26a00}
.verdicts span{display:inline-block;margin-right:1.5em;font-weight:600}
table{border-collapse:collapse;margin:1em 0} td,th{border:1px solid #ddd;padding:.3em .6em;text-align:left;vertical-align:top}
img,object.timeline{max-width:100%;width:100%;border:1px solid #ddd} .story li{margin:.3em 0} pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:13px}
.teach{background:#eef5ff;padding:.6em 1em;border-left:4px solid #4285f4}
</style></head><body>
<h1>{{.Title}}</h1>
{{if .Teaches}}<p class="teach">{{.Teaches}}</p>{{end}}
<p class="verdicts">
<span class="{{cls .Result.Valid}}">overall: {{word .Result.Valid}}</span>
<span class="{{cls .Result.Lock.Valid}}">lock: {{word .Result.Lock.Valid}}</span>
<span class="{{cls .Result.Resource.Valid}}">resource: {{word .Result.Resource.Valid}}</span>
</p>
<ul class="story">
<li><b>Who held:</b> {{.Held}}</li>
<li><b>Who wrote:</b> {{.Wrote}}</li>
<li><b>Who was turned away:</b> {{.TurnedAway}}</li>
</ul>
<p>{{if eq .Result.Failovers 1}}1 failover{{else}}{{.Result.Failovers}} failovers{{end}};
fence numbers handed out twice: {{.Result.FenceTokens.Duplicates}}, going backwards: {{.Result.FenceTokens.Regressions}}.</p>
<h2>Timeline</h2>
<p>One row per client; bars are lock holds coloured by key (red outline: part of a double grant, both the older and the newer holder). Yellow bands: faults in force, labelled above the rows;
red bands: two clients acting as holder at once. Red crosses just above a row: reads or writes the fence turned away; red triangles: stale writes that landed.
Point at a bar, a cross or a band for who, token, fence and times (<a href="` + runfolder.TimelineSVG + `">open the SVG alone</a>).</p>
<object class="timeline" type="image/svg+xml" data="` + runfolder.TimelineSVG + `"><img src="` + runfolder.TimelinePNG + `" alt="timeline of lock holds, faults and writes"></object>
{{if .First}}<h2>What went wrong</h2>
<p>The first violation of each kind (in all: {{.Counts}}).</p>
<table><tr><th>kind</th><th>key</th><th>clients</th><th>when (s)</th><th>cause</th><th>explanation</th><th>picture</th></tr>
{{range .First}}<tr><td>{{.Kind}}</td><td>{{.Key}}</td><td>{{clients .Clients}}</td><td>{{printf "%.3f" .StartS}}–{{printf "%.3f" .EndS}}</td><td>{{.Cause}}</td><td>{{.Explanation}}</td><td>{{if .Picture}}<a href="{{.Picture}}">porcupine</a>{{end}}</td></tr>
{{end}}</table>
<details><summary>All {{len .Result.Violations}} violations</summary>
<table><tr><th>kind</th><th>key</th><th>clients</th><th>when (s)</th><th>cause</th><th>explanation</th></tr>
{{range .Result.Violations}}<tr><td>{{.Kind}}</td><td>{{.Key}}</td><td>{{clients .Clients}}</td><td>{{printf "%.3f" .StartS}}–{{printf "%.3f" .EndS}}</td><td>{{.Cause}}</td><td>{{.Explanation}}</td></tr>
{{end}}</table></details>{{end}}
{{if .Result.DoubleHolderList}}<details><summary>All {{len .Result.DoubleHolderList}} double holders and the fence</summary>
<table><tr><th>key</th><th>older client</th><th>newer client</th><th>overlap</th><th>double grant</th><th>cause</th><th>stale write</th><th>newer turned away</th></tr>
{{range .Result.DoubleHolderList}}<tr><td>{{.Key}}</td><td>{{.StaleClient}}</td><td>{{.NewClient}}</td><td>{{ms .OverlapMs}}</td><td>{{.DoubleGrant}}</td><td>{{.Cause}}</td><td>{{.StaleWrite}}</td><td>{{.NewTurnedAway}}</td></tr>
{{end}}</table></details>{{end}}
{{if .Rerun}}<h2>Rerun this</h2>
<pre class="rerun">{{.Rerun}}</pre>{{end}}
<h2>Summary</h2>
<pre>{{.Summary}}</pre>
<h2>Files</h2>
<ul>{{range .Files}}<li><a href="{{.}}">{{.}}</a></li>{{end}}</ul>
<h2>Sources</h2>
<p>The recipes, the fenced <code>UPDATE ... WHERE last_fence &lt; $f</code> and the remark that a number the database issues is stronger than one kept on Valkey come from
the Valkey 9 lock article, <cite>{{article}}</cite>; the comparison of one primary's <code>SET NX</code> with Redlock's majority, and why Redlock has no fencing counter, from the
Redlock note, <cite>{{note}}</cite>.</p>
<h2>Configuration</h2>
<p>Durations for people; <a href="` + runfolder.Config + `">config.json</a> has the exact values.</p>
<pre>{{.Config}}</pre>
</body></html>
`))

// WriteIndex writes dir/index.html. Links are relative, so the page opens from
// disk in any browser and survives the folder being moved.
func WriteIndex(dir string, p Page) error {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		// SQLite's -wal/-shm sidecars vanish when the resource closes;
		// runfolder's temporary files are hidden.
		if name == runfolder.Index || name == runfolder.ResourceAddr || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") ||
			strings.HasSuffix(name, "-wal") || strings.HasSuffix(name, "-shm") || strings.Contains(name, ".tmp.") {
			continue
		}
		if e.IsDir() {
			if name == runfolder.Logs || name == "porcupine" {
				sub, _ := os.ReadDir(filepath.Join(dir, name))
				for _, s := range sub {
					p.Files = append(p.Files, name+"/"+s.Name())
				}
			}
			continue
		}
		p.Files = append(p.Files, name)
	}
	p.digest()
	return runfolder.WriteAtomic(filepath.Join(dir, runfolder.Index), 0o644, func(w io.Writer) error {
		return indexTmpl.Execute(w, p)
	})
}
