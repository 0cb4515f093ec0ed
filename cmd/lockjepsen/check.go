package main

import (
	"fmt"

	"github.com/lockjepsen/lockjepsen/runner"
)

func init() {
	register(command{
		name:    "check",
		summary: "re-check a stored run: results.json, summary.txt, timeline, index.html (exit 3: unknown)",
		run:     runCheck,
	})
}

func runCheck(args []string) int {
	fs := newFlagSet("check", "check [flags] DIR")
	eps := fs.Duration("epsilon", 0, "lease tolerance added to both expiry bounds (default: the run's config.json, else 10ms)")
	budget := fs.Duration("budget", 0, "porcupine time budget per lock key and resource row; past it the verdict is unknown (default 10s)")
	noHTML := fs.Bool("no-html", false, "do not write porcupine visualisations")
	quiet := fs.Bool("q", false, "do not print the summary")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return fail("check: want exactly one run directory, e.g. lockjepsen check results/latest")
	}
	sum, code, err := runner.CheckDir(fs.Arg(0), runner.CheckOptions{Epsilon: *eps, Budget: *budget, NoHTML: *noHTML})
	if err != nil {
		return fail("check: %v", err)
	}
	if !*quiet {
		fmt.Print(sum)
	}
	return code
}
