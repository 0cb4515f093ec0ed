package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/report"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Version of lockjepsen, recorded in every run's config.json.
const Version = "0.1.0"

// CheckOptions override what config.json says.
type CheckOptions struct {
	Epsilon time.Duration
	Budget  time.Duration
}

// CheckDir checks a stored run: it reads history.jsonl (and resource.jsonl and
// config.json when present), writes results.json, summary.txt, the porcupine
// pictures, the timeline and index.html, and returns the summary and the exit
// code (0 valid, 1 invalid or unknown). An error means the run cannot be
// checked (exit 2), and names the file and line at fault.
func CheckDir(dir string, opt ...CheckOptions) (string, int, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", 2, fmt.Errorf("%s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	hpath := filepath.Join(dir, "history.jsonl")
	events, err := history.ReadFile(hpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", 2, fmt.Errorf("%s has no history.jsonl: not a lockjepsen run directory", dir)
		}
		return "", 2, fmt.Errorf("cannot check %s: %w", dir, err)
	}
	if len(events) == 0 {
		return "", 2, fmt.Errorf("%s is empty: the run stopped before any operation; nothing to check", hpath)
	}
	attempts, err := readAttempts(filepath.Join(dir, "resource.jsonl"))
	if err != nil {
		return "", 2, err
	}
	var cfg Config
	hasCfg := false
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return "", 2, fmt.Errorf("%s/config.json is corrupt: %v", dir, err)
		}
		hasCfg = true
	}
	opts := checker.Options{Epsilon: cfg.Epsilon, Dir: dir}
	if len(opt) > 0 {
		if opt[0].Epsilon > 0 {
			opts.Epsilon = opt[0].Epsilon
		}
		opts.Budget = opt[0].Budget
	}
	res, err := checker.Check(events, attempts, opts)
	if err != nil {
		return "", 2, fmt.Errorf("check %s: %w", dir, err)
	}
	if err := writeJSON(filepath.Join(dir, "results.json"), res); err != nil {
		return "", 2, err
	}
	sum := summarize(dir, res, cfg, hasCfg)
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(sum), 0o644); err != nil {
		return "", 2, fmt.Errorf("write summary: %w", err)
	}
	tl := report.BuildTimeline(events, res)
	title := "lockjepsen"
	if hasCfg {
		title = fmt.Sprintf("lockjepsen %s: recipe %s, fence %s, seed %d", cfg.Scenario, cfg.Recipe, cfg.Fence, cfg.Seed)
	}
	p, err := tl.Plot(title)
	if err != nil {
		return "", 2, err
	}
	if err := report.Save(p, filepath.Join(dir, "timeline"), tl.Clients); err != nil {
		return "", 2, err
	}
	page := report.Page{Title: title, Scenario: cfg.Scenario, Summary: sum, Result: res}
	if sc, err := scenario.Get(cfg.Scenario); err == nil {
		page.Teaches = sc.Teaches
	}
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		page.Config = string(b)
	}
	if err := report.WriteIndex(dir, page); err != nil {
		return "", 2, err
	}
	code := 0
	if res.Valid != checker.Valid {
		code = 1
	}
	return sum, code, nil
}

func readAttempts(path string) ([]history.Attempt, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var out []history.Attempt
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var a history.Attempt
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s:%d: not a resource attempt: %v", path, line, err)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
