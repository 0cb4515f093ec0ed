package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/internal/testbrowser"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/sweep"
)

// The committed results site, opened as a reader opens it: from disk, in
// headless Chromium (Debian's package, installed by make setup-ci). Every page
// results/index.html links must load with a silent console, every file a page
// links must be in the repository (a link to an ignored trial folder works
// only on the machine that ran the sweep), and each row's grid must have one
// cell per planned cell, as the browser parsed it.
func TestSiteInBrowser(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tracked := trackedFiles(t, root)
	site := filepath.Join("results", "index.html")
	sitePage, err := os.ReadFile(filepath.Join(root, site))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, link := range localLinks(string(sitePage)) {
		if strings.HasSuffix(link, runfolder.Index) {
			rows = append(rows, filepath.Join("results", link))
		}
	}
	if len(rows) < 10 {
		t.Fatalf("results/index.html links %d row pages (%v); the site lists every committed sweep", len(rows), rows)
	}
	pages := append([]string{site}, rows...)
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range localLinks(string(b)) {
			target := filepath.Clean(filepath.Join(filepath.Dir(page), link))
			if !tracked[target] {
				t.Errorf("%s links %s, which is not a committed file", page, target)
			}
		}
	}
	// One browser for every page: a probe page frames them all and reports,
	// for each, the grid's cells and the images that decoded, as Chromium
	// built them (one start instead of one a page: 5 s, not 80).
	var probe strings.Builder
	probe.WriteString("<!doctype html><html><body>\n")
	for _, page := range pages {
		probe.WriteString(`<iframe src="file://` + filepath.Join(root, page) + `"></iframe>` + "\n")
	}
	probe.WriteString(`<script>
window.addEventListener('load', () => {
  for (const f of document.querySelectorAll('iframe')) {
    const d = f.contentDocument, g = d.querySelector('table.grid');
    const imgs = [...d.images], ok = imgs.filter(i => i.complete && i.naturalWidth > 0);
    console.log('frame ' + f.src + ' cells ' + (g ? g.querySelectorAll('td').length : -1) +
      ' rows ' + d.querySelectorAll('.n.hit').length + ' images ' + ok.length + ' of ' + imgs.length);
  }
});
</script></body></html>`)
	probePath := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probePath, []byte(probe.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	frames := map[string]string{}
	frameRE := regexp.MustCompile(`"frame file://(\S+) (cells -?\d+ rows \d+ images \d+ of \d+)"`)
	_, console := testbrowser.Open(t, probePath, "--allow-file-access-from-files") // the frames read each other: they are files
	for _, line := range console {
		if m := frameRE.FindStringSubmatch(line); m != nil {
			frames[m[1]] = m[2]
			continue
		}
		t.Errorf("console message: %s", line)
	}
	for _, page := range pages {
		report, ok := frames[filepath.Join(root, page)]
		if !ok {
			t.Errorf("%s: the browser reported nothing for it (it did not load)", page)
			continue
		}
		var cells, rowCounts, loaded, images int
		fmt.Sscanf(report, "cells %d rows %d images %d of %d", &cells, &rowCounts, &loaded, &images)
		if loaded != images {
			t.Errorf("%s: %d of its %d images decoded", page, loaded, images)
		}
		if page == site {
			if rowCounts != len(rows) {
				t.Errorf("the site shows %d rows' counts, want %d", rowCounts, len(rows))
			}
			continue
		}
		if images == 0 {
			t.Errorf("%s shows no picture", page)
		}
		r := new(sweep.Report)
		if err := runfolder.ReadJSON(filepath.Join(root, filepath.Dir(page), sweep.ReportJSON), r); err != nil {
			t.Fatal(err)
		}
		if want := len(r.Plan.Configs) * len(r.Plan.Faults); cells != want {
			t.Errorf("%s: the grid shows %d cells, the plan has %d (%d configurations × %d faults)", page, cells, want, len(r.Plan.Configs), len(r.Plan.Faults))
		}
	}
}

var linkRE = regexp.MustCompile(`(?:src|href)="([^"#]+)"`)

// localLinks are the page's links to files (no scheme, no fragment alone).
func localLinks(page string) []string {
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(page, -1) {
		if !strings.Contains(m[1], ":") {
			out = append(out, strings.SplitN(m[1], "#", 2)[0])
		}
	}
	return out
}

func trackedFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the site test reads a git checkout)", err)
	}
	tracked := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			tracked[filepath.FromSlash(f)] = true
			for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
				tracked[filepath.FromSlash(d)] = true // a link to a folder (its README on GitHub)
			}
		}
	}
	return tracked
}
