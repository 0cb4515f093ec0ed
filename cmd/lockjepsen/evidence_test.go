package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Evidence keeps the timeline's PNG: the SVG goes, and so does every link
// to it, so the committed page links only files that are there (the site's
// browser test checks every link), whatever of the run page's SVG markup
// the page holds.
func TestDropSVG(t *testing.T) {
	dir := t.TempDir()
	page := `<p>Point at a bar, a cross or a band for who, token, fence and times (<a href="timeline.svg">open the SVG alone</a>).</p>
<object class="timeline" type="image/svg+xml" data="timeline.svg"><img src="timeline.png" alt="timeline"></object>
<ul><li><a href="history.jsonl">history.jsonl</a></li><li><a href="timeline.svg">timeline.svg</a></li><li><a href="timeline.png">timeline.png</a></li></ul>`
	for name, body := range map[string]string{"index.html": page, "timeline.svg": "<svg/>", "timeline.png": "png"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // a second pass finds nothing to do
		if err := dropSVG(dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if strings.Contains(got, "svg") || !strings.Contains(got, `<img src="timeline.png"`) || !strings.Contains(got, `href="timeline.png"`) ||
		strings.Contains(got, "Point at a bar") {
		t.Errorf("index.html after dropSVG:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "timeline.svg")); !os.IsNotExist(err) {
		t.Errorf("timeline.svg is still there (%v)", err)
	}
}

// A trial is evidence when its check found violations, or, valid, when a
// stale write got in (the finding a cell is red for that changes no
// verdict, shrunk by its kind); unknown and a folder without results.json
// are not.
func TestEvidenceInReadsTheVerdict(t *testing.T) {
	for _, tt := range []struct {
		results string
		want    bool
		kind    string
	}{
		{`{"valid":false}`, true, ""},
		{`{"valid":true}`, false, ""},
		{`{"valid":true,"stale_writes":{"accepted":1}}`, true, "stale-write-accepted"},
		{`{"valid":"unknown","stale_writes":{"accepted":1}}`, false, ""},
		{`{"valid":"unknown"}`, false, ""},
		{"", false, ""},
	} {
		dir := t.TempDir()
		if tt.results != "" {
			if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(tt.results), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if kind, got := evidenceIn(dir); got != tt.want || kind != tt.kind {
			t.Errorf("results.json %q: evidence %v (kind %q), want %v (%q)", tt.results, got, kind, tt.want, tt.kind)
		}
	}
	for _, dir := range []string{"../../results/network/evidence/native.net-reset"} {
		if _, ok := evidenceIn(dir); !ok {
			t.Errorf("%s, a shrunk violation, does not read invalid", dir)
		}
	}
}
