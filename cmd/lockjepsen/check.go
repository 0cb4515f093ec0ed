package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
)

// exitUnknown is check's answer when porcupine ran out of budget without a
// witness. It is neither 0 (nothing was proven valid; Jepsen treats unknown
// as not valid, and a CI gate testing for 0 must fail) nor 1 (no violation was
// found, and a teacher should not show an "unknown" as a broken lock).
const exitUnknown = 3

func init() {
	register(command{
		name:    "check",
		summary: "re-check a stored run: results.json, summary.txt, porcupine pictures (exit 3: unknown)",
		run:     runCheck,
	})
}

func runCheck(args []string) int {
	fs := newFlagSet("check", "check [flags] DIR")
	eps := fs.Duration("epsilon", 0, "lease tolerance ε added to both expiry bounds (default: config.json check.epsilon_ms, else 10ms)")
	budget := fs.Duration("budget", 0, "porcupine time budget per lock key and resource row; past it the verdict is unknown (default: config.json check.budget_s, else 10s)")
	noHTML := fs.Bool("no-html", false, "do not write porcupine visualisations")
	quiet := fs.Bool("q", false, "do not print the summary")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fail("check: %s is not a run directory", dir)
	}
	events, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return fail("check: cannot check: %v", err)
	}
	attempts, err := checker.ReadAttemptsFile(filepath.Join(dir, "resource.jsonl"))
	if err != nil {
		return fail("check: cannot check: %v", err)
	}
	opts, err := configOptions(filepath.Join(dir, "config.json"))
	if err != nil {
		return fail("check: %v", err)
	}
	if *eps != 0 {
		opts.Epsilon = *eps
	}
	if *budget != 0 {
		opts.Budget = *budget
	}
	if !*noHTML {
		opts.Dir = dir
	}
	res, err := checker.Check(events, attempts, opts)
	if err != nil {
		return fail("check: cannot check %s: %v", filepath.Join(dir, "history.jsonl"), err)
	}
	b, err := res.MarshalIndent()
	if err != nil {
		return fail("check: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return fail("check: write results: %v", err)
	}
	summary := res.Summary()
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary), 0o644); err != nil {
		return fail("check: write summary: %v", err)
	}
	if !*quiet {
		fmt.Print(summary)
	}
	switch res.Valid {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

// configOptions reads the checker's settings from the run's config.json when
// present: check.epsilon_ms and check.budget_s, or the same keys at the top
// level. Other keys belong to the run and are ignored.
func configOptions(path string) (checker.Options, error) {
	var opts checker.Options
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return opts, nil
	}
	if err != nil {
		return opts, fmt.Errorf("read %s: %w", path, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return opts, fmt.Errorf("parse %s: %w", path, err)
	}
	number := func(key string) (float64, bool) {
		if sub, ok := cfg["check"].(map[string]any); ok {
			if v, ok := sub[key].(float64); ok {
				return v, true
			}
		}
		v, ok := cfg[key].(float64)
		return v, ok
	}
	if v, ok := number("epsilon_ms"); ok {
		opts.Epsilon = time.Duration(v * float64(time.Millisecond))
	}
	if v, ok := number("budget_s"); ok {
		opts.Budget = time.Duration(v * float64(time.Second))
	}
	return opts, nil
}
