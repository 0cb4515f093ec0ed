package main

import (
	"fmt"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runner"
)

func init() {
	register(command{
		name:    "check",
		summary: "re-check a stored run: results.json, summary.txt, timeline, index.html (exit 2: unknown)",
		run:     runCheck,
	})
}

func runCheck(args []string) int {
	fs := newFlagSet("check", "check [flags] DIR")
	eps := fs.Duration("epsilon", 0, fmt.Sprintf("lease tolerance on both expiry bounds; 0: config.json's check.epsilon_ms, else its epsilon_ns, else %v. A negative one, or one of TTL/2 or more, draws a warning", checker.DefaultEpsilon))
	budget := fs.Duration("budget", 0, fmt.Sprintf("porcupine time budget per lock key and resource row; past it the verdict is unknown; 0: config.json's check.budget_s, else %v", checker.DefaultBudget))
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
