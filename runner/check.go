package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/report"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Version of lockjepsen, recorded in every run's config.json.
const Version = "0.1.0"

// CheckOptions override what config.json says.
type CheckOptions struct {
	Epsilon time.Duration
	Budget  time.Duration
	NoHTML  bool // skip the porcupine pictures
}

// Exit codes of a check.
const (
	ExitValid   = 0
	ExitInvalid = 1
	ExitCannot  = 2
	// ExitUnknown: porcupine ran out of budget without a witness. Not 0, since
	// nothing was proven (Jepsen treats unknown as not valid, so a CI gate on 0
	// fails), and not 1, since no violation was found.
	ExitUnknown = 3
)

// CheckDir checks a stored run: it reads history.jsonl (and resource.jsonl and
// config.json when present), writes results.json, summary.txt, the porcupine
// pictures, the timeline and index.html, and returns the summary and the exit
// code (0 valid, 1 invalid or unknown). An error means the run cannot be
// checked (exit 2), and names the file and line at fault.
func CheckDir(dir string, opt ...CheckOptions) (string, int, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", ExitCannot, fmt.Errorf("%s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	hpath := filepath.Join(dir, runfolder.History)
	events, err := history.ReadFile(hpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", ExitCannot, fmt.Errorf("%s has no "+runfolder.History+": not a lockjepsen run directory", dir)
		}
		return "", ExitCannot, fmt.Errorf("cannot check %s: %w", dir, err)
	}
	if len(events) == 0 {
		return "", ExitCannot, fmt.Errorf("%s is empty: the run stopped before any operation; nothing to check", hpath)
	}
	attempts, err := checker.ReadAttemptsFile(filepath.Join(dir, runfolder.Resource))
	if err != nil {
		return "", ExitCannot, err
	}
	var cfg Config
	hasCfg := false
	if err := runfolder.ReadJSON(filepath.Join(dir, runfolder.Config), &cfg); err == nil {
		hasCfg = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", ExitCannot, err
	}
	opts := checker.Options{Epsilon: cfg.Epsilon, Dir: dir}
	if len(opt) > 0 {
		if opt[0].Epsilon > 0 {
			opts.Epsilon = opt[0].Epsilon
		}
		opts.Budget = opt[0].Budget
		if opt[0].NoHTML {
			opts.Dir = ""
		}
	}
	res, err := checker.Check(events, attempts, opts)
	if err != nil {
		return "", ExitCannot, fmt.Errorf("check %s: %w", dir, err)
	}
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.Results), withMetrics(res, events, cfg.TTL)); err != nil {
		return "", ExitCannot, err
	}
	sum := summarize(dir, res, cfg, hasCfg)
	if err := runfolder.WriteFileAtomic(filepath.Join(dir, runfolder.Summary), []byte(sum), 0o644); err != nil {
		return "", ExitCannot, fmt.Errorf("write summary: %w", err)
	}
	tl := report.BuildTimeline(events, res)
	title := "lockjepsen"
	if hasCfg {
		title = fmt.Sprintf("lockjepsen %s: recipe %s, fence %s, seed %d", cfg.Scenario, cfg.Recipe, cfg.Fence, cfg.Seed)
	}
	p, err := tl.Plot(title)
	if err != nil {
		return "", ExitCannot, err
	}
	if err := report.Save(p, filepath.Join(dir, runfolder.Timeline), tl.Clients); err != nil {
		return "", ExitCannot, err
	}
	page := report.Page{Title: title, Scenario: cfg.Scenario, Summary: sum, Result: res}
	if sc, err := scenario.Get(cfg.Scenario); err == nil {
		page.Teaches = sc.Teaches
	}
	if b, err := os.ReadFile(filepath.Join(dir, runfolder.Config)); err == nil {
		page.Config = string(b)
	}
	if len(cfg.Command) > 0 {
		page.Rerun = shellJoin(cfg.Command)
	}
	if err := report.WriteIndex(dir, page); err != nil {
		return "", ExitCannot, err
	}
	switch res.Valid {
	case checker.Valid:
		return sum, ExitValid, nil
	case checker.Invalid:
		return sum, ExitInvalid, nil
	}
	return sum, ExitUnknown, nil
}
