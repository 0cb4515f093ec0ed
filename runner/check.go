package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/marks"

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
	in, err := readRun(dir)
	if err != nil {
		return "", ExitCannot, err
	}
	var o CheckOptions
	if len(opt) > 0 {
		o = opt[0]
	}
	cat := nemesis.Catalog()
	opts := checker.Options{Epsilon: in.keys.Epsilon(o.Epsilon), Budget: in.keys.Budget(o.Budget), Pictures: !o.NoHTML, Marks: cat}
	res := checker.CheckHistory(in.h, in.attempts, opts)
	report.Explain(res, cat)
	if err := report.DrawPorcupine(dir, res); err != nil {
		return "", ExitCannot, err
	}
	title := "lockjepsen"
	if in.hasCfg {
		title = fmt.Sprintf("lockjepsen %s: recipe %s, fence %s, seed %d", in.cfg.Scenario, in.cfg.Recipe, in.cfg.Fence, in.cfg.Seed)
	}
	// The timeline (a second pass over the file, then the plot) is drawn on
	// the other core while the metrics replay and the summary are written:
	// 1.1 s and 0.7 s of a 1M-event check.
	drawn := make(chan timelineDrawn, 1)
	go func() { drawn <- drawTimeline(dir, in, res, cat, title) }()
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.Results), withMetrics(res, in.h, in.cfg.TTL, cat)); err != nil {
		<-drawn
		return "", ExitCannot, err
	}
	sum := summarize(dir, res, in.cfg, in.hasCfg)
	if err := runfolder.WriteFileAtomic(filepath.Join(dir, runfolder.Summary), []byte(sum), 0o644); err != nil {
		<-drawn
		return "", ExitCannot, fmt.Errorf("write summary: %w", err)
	}
	tl := <-drawn
	if tl.err != nil {
		return "", ExitCannot, tl.err
	}
	if err := writeRunPage(dir, in, res, title+tl.note, sum); err != nil {
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

// runInputs is what a check reads of a run folder.
type runInputs struct {
	hpath    string
	h        *checker.History
	attempts *checker.AttemptIndex
	cfg      Config
	keys     checker.ConfigKeys
	hasCfg   bool   // config.json was there (a bare history checks too)
	cfgJSON  []byte // its text, shown on the page
}

// readRun reads the history, the resource's attempts and config.json; the
// error names the file at fault.
func readRun(dir string) (*runInputs, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	in := &runInputs{hpath: filepath.Join(dir, runfolder.History)}
	// The resource log is read on the other core while the history is:
	// 0.85 s of json.Unmarshal on 1M events' 115,000 writes.
	attemptsRead := make(chan attemptsResult, 1)
	go func() {
		idx, err := checker.IndexAttemptsFile(filepath.Join(dir, runfolder.Resource))
		attemptsRead <- attemptsResult{idx, err}
	}()
	in.h, err = readHistory(in.hpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no "+runfolder.History+": not a lockjepsen run directory", dir)
		}
		return nil, fmt.Errorf("cannot check %s: %w", dir, err)
	}
	if in.h.Len() == 0 {
		return nil, fmt.Errorf("%s is empty: the run stopped before any operation; nothing to check", in.hpath)
	}
	ar := <-attemptsRead
	if ar.err != nil {
		return nil, ar.err
	}
	in.attempts = ar.idx
	b, err := os.ReadFile(filepath.Join(dir, runfolder.Config))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &in.cfg); err != nil {
			return nil, fmt.Errorf("%s/%s is corrupt: %v", dir, runfolder.Config, err)
		}
		if in.keys, err = checker.ReadConfigKeys(b); err != nil {
			return nil, fmt.Errorf("%s/%s is corrupt: %v", dir, runfolder.Config, err)
		}
		in.hasCfg, in.cfgJSON = true, b
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return in, nil
}

// timelineDrawn is the timeline's outcome: the note its title takes (a
// window of a long run), or why it could not be drawn.
type timelineDrawn struct {
	note string
	err  error
}

// drawTimeline draws timeline.png from the history, in a window of a run
// too long to draw whole.
func drawTimeline(dir string, in *runInputs, res *checker.Result, cat *marks.Catalog, title string) timelineDrawn {
	win, note, err := timelineEvents(in.hpath, in.h, res, report.TimelineMaxEvents)
	if err != nil {
		return timelineDrawn{err: fmt.Errorf("cannot check %s: %w", dir, err)}
	}
	tl := report.BuildTimeline(win, res, cat)
	tl.Start = in.h.Start() // seconds count from the run's first event, as the summary's do
	fig, err := tl.Plot(title + note)
	if err == nil {
		err = fig.Save(filepath.Join(dir, runfolder.Timeline))
	}
	return timelineDrawn{note: note, err: err}
}

// writeRunPage writes index.html: the summary, the scenario's lesson, the
// config and the command that reruns the run.
func writeRunPage(dir string, in *runInputs, res *checker.Result, title, sum string) error {
	page := report.Page{Title: title, Scenario: in.cfg.Scenario, Summary: sum, Result: res}
	if sc, err := scenario.Get(in.cfg.Scenario); err == nil {
		page.Teaches = sc.Teaches
	}
	if in.hasCfg {
		page.Config = string(in.cfgJSON)
	}
	if len(in.cfg.Command) > 0 {
		page.Rerun = ShellJoin(in.cfg.Command)
	}
	return report.WriteIndex(dir, page)
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
