package report

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// DrawPorcupine writes porcupine's page for every picture the checker
// gathered into dir, lists them in res.Visualizations and links each
// violation to the page of its partition. Each page is titled with its key
// and the run (dir's name) and opens with a heading saying what it shows.
func DrawPorcupine(dir string, res *checker.Result) error {
	if len(res.Pictures) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	run := filepath.Base(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		run = filepath.Base(abs)
	}
	used := make(map[string]bool)
	pages := make(map[[2]string]string)
	for _, p := range res.Pictures {
		kind := runfolder.PageLock
		if p.Affects == "resource" {
			kind = runfolder.PageResource
		}
		name := runfolder.PorcupinePage(kind, p.Key)
		for i := 2; used[name]; i++ {
			name = runfolder.PorcupinePage(kind, fmt.Sprintf("%s-%d", p.Key, i))
		}
		used[name] = true
		path := filepath.Join(dir, name)
		info := p.Info
		info.AddAnnotations(p.Annotations)
		if err := porcupine.VisualizePath(p.Model, info, path); err != nil {
			return fmt.Errorf("draw %s: %w", path, err)
		}
		if err := retitle(path, p.Affects, p.Key, run); err != nil {
			return err
		}
		res.Visualizations = append(res.Visualizations, name)
		pages[[2]string{p.Affects, p.Key}] = name
	}
	for i := range res.Violations {
		v := &res.Violations[i]
		if name, ok := pages[[2]string{v.Affects, v.Key}]; ok {
			v.Picture = name
		}
	}
	return nil
}

// PageTitle is a porcupine page's title: the key, which check, the run.
func PageTitle(affects, key, run string) string {
	what := "lock service"
	if affects == "resource" {
		what = "resource"
	}
	return fmt.Sprintf("%s (%s) — run %s — porcupine", key, what, run)
}

// retitle replaces porcupine's "<title>Porcupine</title>" with PageTitle and
// puts a heading under porcupine's fixed legend: the key, the run, how to
// read the picture and the way back to index.html.
func retitle(path, affects, key, run string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	title := html.EscapeString(PageTitle(affects, key, run))
	s = strings.Replace(s, "<title>Porcupine</title>", "<title>"+title+"</title>", 1)
	what := "the lock service's history of this key"
	if affects == "resource" {
		what = "the resource's reads and writes of this row"
	}
	head := fmt.Sprintf(`<body>
    <header style="margin:44px 10px 0 10px">
      <h1 style="font-size:1.3em;margin:0">%s <small style="font-weight:normal">(%s), run %s</small></h1>
      <p style="margin:.3em 0">Porcupine's picture of %s: one row per history process, operations as bars; it found no order in which they could have happened one at a time.
      Red marks the operations that cannot be placed; the <code>nemesis</code> annotations are the faults in force. <a href="%s">Back to the run</a>.</p>
    </header>`, html.EscapeString(key), map[bool]string{true: "resource", false: "lock service"}[affects == "resource"], html.EscapeString(run), what, runfolder.Index)
	s = strings.Replace(s, "<body>", head, 1)
	return runfolder.WriteFileAtomic(path, []byte(s), 0o644)
}
