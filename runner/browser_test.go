package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/internal/testbrowser"
)

// checkInBrowser opens a run's index.html in headless Chromium (Debian's
// package, installed by make setup-ci): the page must render its verdicts, every
// file it links must exist, every image must decode in the browser, and the
// console must stay silent.
func checkInBrowser(t *testing.T, dir string) {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#:]+)"`).FindAllStringSubmatch(string(page), -1) {
		if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
			t.Errorf("index.html links %s, which is missing", m[1])
		}
		if strings.HasSuffix(m[1], ".png") || strings.HasSuffix(m[1], ".svg") {
			images = append(images, m[1])
		}
	}
	if len(images) == 0 {
		t.Error("index.html shows no image")
	}
	// A probe page beside index.html reports each image's load or failure on
	// the console, where the test reads it.
	var probe strings.Builder
	for _, img := range images {
		probe.WriteString(`<img src="` + img + `" onload="console.log('loaded ` + img + `')" onerror="console.error('failed ` + img + `')">`)
	}
	probePath := filepath.Join(dir, "browser-probe.tmp.html")
	if err := os.WriteFile(probePath, []byte(probe.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probePath)
	for _, target := range []string{"index.html", filepath.Base(probePath)} {
		dom, console := testbrowser.Open(t, filepath.Join(dir, target))
		if target == "index.html" {
			if !strings.Contains(dom, "overall:") || !strings.Contains(dom, "Timeline") {
				t.Errorf("index.html did not render its verdicts")
			}
			if len(console) > 0 {
				t.Errorf("console messages on index.html: %v", console)
			}
			continue
		}
		for _, img := range images {
			if !strings.Contains(strings.Join(console, "\n"), "loaded "+img) {
				t.Errorf("%s did not load in the browser: %v", img, console)
			}
		}
	}
}
