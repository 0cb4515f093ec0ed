// Command testtimes reads `go test -json` on stdin and prints what a CI log
// needs: each package's result as it ends, the whole output of every test
// that failed, then each package's wall time and the slowest tests, so that a
// test that adds minutes shows in the log of the landing that added it. It
// exits 1 when a test or a package failed, or when the stream ends before
// every package it started has ended (go test itself died).
//
// A test's "held" time is its elapsed time less what it waited for one of the
// end-to-end slots (the line internal/testslot logs): the minutes it cost,
// not the minutes it queued.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time   time.Time
	Action string
	// ImportPath names a build event's package (build-output, build-fail).
	ImportPath string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
}

type testKey struct{ pkg, test string }

type testResult struct {
	testKey
	action  string
	elapsed float64
	waited  float64
}

// waitLine is what internal/testslot logs once a test holds its slot.
var waitLine = regexp.MustCompile(`testslot: slot-\d+(?:\+slot-\d+)* after ([0-9.]+)s`)

func main() {
	top := 15
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "testtimes: %q: want the number of slowest tests to print, e.g. 15\n", os.Args[1])
			os.Exit(254)
		}
		top = n
	}
	os.Exit(run(os.Stdin, os.Stdout, top))
}

func run(in io.Reader, out io.Writer, top int) int {
	outputs := map[testKey]*strings.Builder{}
	waited := map[testKey]float64{}
	var tests []testResult
	type pkgResult struct {
		name    string
		action  string
		elapsed float64
	}
	var pkgs []pkgResult
	started := map[string]bool{}
	ended := map[string]bool{}
	failed := false

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// go vet or build errors come as plain text: pass them on.
			fmt.Fprintln(out, string(line))
			continue
		}
		k := testKey{e.Package, e.Test}
		switch e.Action {
		case "start":
			started[e.Package] = true
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = true
		case "output":
			b := outputs[k]
			if b == nil {
				b = &strings.Builder{}
				outputs[k] = b
			}
			b.WriteString(e.Output)
			if m := waitLine.FindStringSubmatch(e.Output); m != nil && e.Test != "" {
				w, _ := strconv.ParseFloat(m[1], 64)
				waited[k] += w
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				ended[e.Package] = true
				pkgs = append(pkgs, pkgResult{e.Package, e.Action, e.Elapsed})
				status := "ok  "
				if e.Action == "fail" {
					status, failed = "FAIL", true
					// The package's own output: a panic, a TestMain error, a timeout.
					if b := outputs[k]; b != nil {
						fmt.Fprint(out, b.String())
					}
				}
				fmt.Fprintf(out, "%s %s\t%.1fs\n", status, e.Package, e.Elapsed)
				continue
			}
			tests = append(tests, testResult{k, e.Action, e.Elapsed, waited[k]})
			if e.Action == "fail" {
				failed = true
				fmt.Fprintf(out, "--- FAIL: %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
				if b := outputs[k]; b != nil {
					fmt.Fprint(out, indent(b.String()))
				}
			}
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testtimes: reading go test -json: %v\n", err)
		failed = true
	}
	for p := range started {
		if !ended[p] {
			fmt.Fprintf(out, "FAIL %s: the stream ended before the package did\n", p)
			failed = true
		}
	}

	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].elapsed > pkgs[j].elapsed })
	fmt.Fprintln(out, "\nPackages by wall time (they run side by side: the longest bounds the run):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, p := range pkgs {
		if p.elapsed < 1 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", fmtDur(p.elapsed), p.action, p.name)
	}
	tw.Flush()

	// Leaf tests only: a parent's time is its subtests'. Every prefix up to
	// a '/' may be the parent: a subtest's own name may hold one (an
	// adapter's path), so the last '/' alone once missed TestClusterRun,
	// which then led the table with its subtests' 16 minutes of waiting.
	parent := map[testKey]bool{}
	for _, r := range tests {
		for i := range len(r.test) {
			if r.test[i] == '/' {
				parent[testKey{r.pkg, r.test[:i]}] = true
			}
		}
	}
	var leaves []testResult
	var heldSum float64
	for _, r := range tests {
		if !parent[r.testKey] {
			leaves = append(leaves, r)
			heldSum += r.elapsed - r.waited
		}
	}
	sort.Slice(leaves, func(i, j int) bool {
		return leaves[i].elapsed-leaves[i].waited > leaves[j].elapsed-leaves[j].waited
	})
	if len(leaves) > top {
		leaves = leaves[:top]
	}
	fmt.Fprintf(out, "\nThe %d slowest tests (held: elapsed less the wait for an end-to-end slot; all tests held %s in sum):\n", len(leaves), fmtDur(heldSum))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "held\twaited\tresult\ttest\t")
	for _, r := range leaves {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t\n", fmtDur(r.elapsed-r.waited), fmtDur(r.waited), r.action, strings.TrimPrefix(r.pkg, "github.com/lockjepsen/lockjepsen/"), r.test)
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}

func fmtDur(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}
