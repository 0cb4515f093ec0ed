package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockjepsen/lockjepsen/exitcode"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
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

// Exit codes of a check (package exitcode: Jepsen's).
const (
	ExitValid   = exitcode.Valid
	ExitInvalid = exitcode.Invalid
	ExitCannot  = exitcode.BadInput
	ExitUnknown = exitcode.Unknown
)

// CheckDir checks a stored run: it reads history.jsonl (and resource.jsonl and
// config.json when present), writes results.json, summary.txt, the porcupine
// pictures, the timeline and index.html, and returns the summary and the exit
// code (0 valid, 1 invalid or unknown). An error means the run cannot be
// checked (exit 254), and names the file and line at fault.
func CheckDir(dir string, opt ...CheckOptions) (string, int, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", ExitCannot, fmt.Errorf("%s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	hpath := filepath.Join(dir, runfolder.History)
	// The resource log is read on the other core while the history is:
	// 0.85 s of json.Unmarshal on 1M events' 115,000 writes.
	attemptsRead := make(chan attemptsResult, 1)
	go func() {
		idx, err := checker.IndexAttemptsFile(filepath.Join(dir, runfolder.Resource))
		attemptsRead <- attemptsResult{idx, err}
	}()
	h, err := readHistory(hpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", ExitCannot, fmt.Errorf("%s has no "+runfolder.History+": not a lockjepsen run directory", dir)
		}
		return "", ExitCannot, fmt.Errorf("cannot check %s: %w", dir, err)
	}
	if h.Len() == 0 {
		return "", ExitCannot, fmt.Errorf("%s is empty: the run stopped before any operation; nothing to check", hpath)
	}
	ar := <-attemptsRead
	if ar.err != nil {
		return "", ExitCannot, ar.err
	}
	attempts := ar.idx
	var cfg Config
	var ck checker.ConfigKeys
	hasCfg := false
	if b, err := os.ReadFile(filepath.Join(dir, runfolder.Config)); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return "", ExitCannot, fmt.Errorf("%s/%s is corrupt: %v", dir, runfolder.Config, err)
		}
		if ck, err = checker.ReadConfigKeys(b); err != nil {
			return "", ExitCannot, fmt.Errorf("%s/%s is corrupt: %v", dir, runfolder.Config, err)
		}
		hasCfg = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", ExitCannot, err
	}
	var o CheckOptions
	if len(opt) > 0 {
		o = opt[0]
	}
	cat := nemesis.Catalog()
	opts := checker.Options{Epsilon: ck.Epsilon(o.Epsilon), Budget: ck.Budget(o.Budget), Pictures: !o.NoHTML, Marks: cat}
	res := checker.CheckHistory(h, attempts, opts)
	report.Explain(res, cat)
	if err := report.DrawPorcupine(dir, res); err != nil {
		return "", ExitCannot, err
	}
	title := "lockjepsen"
	if hasCfg {
		title = fmt.Sprintf("lockjepsen %s: recipe %s, fence %s, seed %d", cfg.Scenario, cfg.Recipe, cfg.Fence, cfg.Seed)
	}
	// The timeline (a second pass over the file, then the plot) is drawn on
	// the other core while the metrics replay and the summary are written:
	// 1.1 s and 0.7 s of a 1M-event check.
	drawn := make(chan error, 1)
	var note string
	go func() {
		win, n, err := timelineEvents(hpath, h, res, report.TimelineMaxEvents)
		if err != nil {
			drawn <- fmt.Errorf("cannot check %s: %w", dir, err)
			return
		}
		note = n
		tl := report.BuildTimeline(win, res, cat)
		tl.Start = h.Start() // seconds count from the run's first event, as the summary's do
		fig, err := tl.Plot(title + note)
		if err == nil {
			err = fig.Save(filepath.Join(dir, runfolder.Timeline))
		}
		drawn <- err
	}()
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.Results), withMetrics(res, h, cfg.TTL, cat)); err != nil {
		<-drawn
		return "", ExitCannot, err
	}
	sum := summarize(dir, res, cfg, hasCfg)
	if err := runfolder.WriteFileAtomic(filepath.Join(dir, runfolder.Summary), []byte(sum), 0o644); err != nil {
		<-drawn
		return "", ExitCannot, fmt.Errorf("write summary: %w", err)
	}
	if err := <-drawn; err != nil {
		return "", ExitCannot, err
	}
	title += note
	page := report.Page{Title: title, Scenario: cfg.Scenario, Summary: sum, Result: res}
	if sc, err := scenario.Get(cfg.Scenario); err == nil {
		page.Teaches = sc.Teaches
	}
	if b, err := os.ReadFile(filepath.Join(dir, runfolder.Config)); err == nil {
		page.Config = string(b)
	}
	if len(cfg.Command) > 0 {
		page.Rerun = ShellJoin(cfg.Command)
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

type attemptsResult struct {
	idx *checker.AttemptIndex
	err error
}

// readHistory streams history.jsonl (history.Scan: every structural rule,
// FILE:LINE on a malformed line) into the checker's operations, without
// holding the events. On 1M events holding them was 288 MB of a 700 MB live
// heap and most of a 1.46 GiB peak RSS.
func readHistory(path string) (*checker.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	b := checker.NewBuilder()
	if st, err := f.Stat(); err == nil {
		// An operation is two lines of 150-250 bytes.
		b.Grow(int(st.Size() / 350))
	}
	if err := history.Scan(f, path, b.Add); err != nil {
		return nil, err
	}
	return b.History(), nil
}

// timelineEvents reads back from the file the events the timeline draws:
// the timeline's window (the max events from report.TimelineFrom on, or
// all of them), found in the operations' time order and picked up by
// a second pass over the file, so that only the window is held.
func timelineEvents(path string, h *checker.History, res *checker.Result, max int) ([]history.Event, string, error) {
	n := h.Len()
	type key struct{ t, i int64 }
	lo, hi := key{math.MinInt64, math.MinInt64}, key{math.MaxInt64, math.MaxInt64}
	windowed := n > max
	if windowed {
		first := min(h.Before(report.TimelineFrom(h.Start(), res)), n-max)
		r := 0
		for e := range h.Replay() {
			if r == first {
				lo = key{e.Time, e.Index}
			}
			if r == first+max-1 {
				hi = key{e.Time, e.Index}
				break
			}
			r++
		}
	}
	less := func(a, b key) bool { return a.t < b.t || a.t == b.t && a.i < b.i }
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	w := make([]history.Event, 0, min(n, max))
	errPast := errors.New("past the window")
	err = history.Scan(f, path, func(e *history.Event) error {
		k := key{e.Time, e.Index}
		if !less(k, lo) && !less(hi, k) {
			w = append(w, *e)
		} else if less(hi, k) && h.Sorted() {
			// A sorted file has nothing further for the window: a valid run's
			// window is its first 200,000 events, not the whole file again.
			return errPast
		}
		return nil
	})
	if err != nil && err != errPast {
		return nil, "", err
	}
	history.Sort(w)
	if !windowed {
		return w, "", nil
	}
	return w, report.WindowNote(w, h.Start(), h.End(), n), nil
}
