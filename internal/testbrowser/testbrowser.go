// Package testbrowser opens a page from disk in headless Chromium (Debian's
// package, installed by make setup-ci), for the tests that check what a
// reader sees: a run's report and the results site.
package testbrowser

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Open loads the file at path (absolute) and returns the DOM Chromium built
// and the lines its console logged; flags go before the page's URL. A
// missing Chromium or a browser that fails ends the test.
func Open(t testing.TB, path string, flags ...string) (string, []string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (make setup-ci installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu"}, flags...)
	args = append(args, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", "file://"+path)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium on %s: %v\n%s", path, err, stderr.String())
	}
	var console []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return string(dom), console
}
