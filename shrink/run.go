package shrink

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/report"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Run is what a run folder holds for the checker, as shrink reads and writes
// it: a shrunk Run is written as a folder `lockjepsen check` accepts.
type Run struct {
	Events   []history.Event   // history.jsonl, in time order (ties by index)
	Attempts []history.Attempt // resource.jsonl in file order; nil when the run had none
	// Nemesis is nemesis.jsonl (the fault events alone, numbered by their
	// own writer); nil when absent. The checker reads the fault events of
	// history.jsonl; this file is kept in step with them.
	Nemesis []history.Event
	Config  []byte        // config.json as it was; nil when absent
	read    time.Duration // how long Load took, for the report
	// part is set when LoadPart kept one key's events: the check of the
	// whole run it streamed, and what a shrink needs of the whole run.
	part *partOf
}

// partOf is what a Run of one key's events keeps of the whole run.
type partOf struct {
	dir    string
	whole  *checker.Result
	counts Counts // the whole run's
	origin int64  // its first event
}

// Load reads a run folder. A folder without history.jsonl, an empty one and
// a malformed one are errors that say so (history.ReadFile names the line).
func Load(dir string) (*Run, error) {
	began := time.Now()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	hpath := filepath.Join(dir, runfolder.History)
	events, err := history.ReadFile(hpath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s has no %s: not a lockjepsen run directory", dir, runfolder.History)
	case err != nil:
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	case len(events) == 0:
		return nil, fmt.Errorf("%s is empty: the run stopped before any operation; nothing to shrink", hpath)
	}
	r := &Run{Events: events}
	err = checker.ScanAttemptsFile(filepath.Join(dir, runfolder.Resource), func(a *history.Attempt) {
		r.Attempts = append(r.Attempts, *a)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	if r.Nemesis, err = history.ReadFile(filepath.Join(dir, runfolder.Nemesis)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	if r.Config, err = os.ReadFile(filepath.Join(dir, runfolder.Config)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	r.read = time.Since(began)
	return r, nil
}

// CheckOptions are the options `lockjepsen check` would judge this run with:
// config.json's check keys, else the defaults.
func (r *Run) CheckOptions() (checker.Options, error) {
	k, err := checker.ReadConfigKeys(r.Config)
	if err != nil {
		return checker.Options{}, fmt.Errorf("%s is corrupt: %w", runfolder.Config, err)
	}
	return checker.Options{Epsilon: k.Epsilon(0), Budget: k.Budget(0)}, nil
}

// Keys are the lock keys the clients' operations name, sorted.
func (r *Run) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for i := range r.Events {
		if k := r.Events[i].Key; r.Events[i].IsClient() && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Write writes the run as a folder `lockjepsen check` accepts: history.jsonl,
// nemesis.jsonl, resource.jsonl (when the run had a resource log) and
// config.json (when it had one), each atomically.
func (r *Run) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := history.WriteFile(filepath.Join(dir, runfolder.History), r.Events); err != nil {
		return err
	}
	if err := history.WriteFile(filepath.Join(dir, runfolder.Nemesis), r.Nemesis); err != nil {
		return err
	}
	if r.Attempts != nil {
		if err := history.WriteAttemptsFile(filepath.Join(dir, runfolder.Resource), r.Attempts); err != nil {
			return fmt.Errorf("write %s: %w", runfolder.Resource, err)
		}
	}
	if r.Config != nil {
		if err := runfolder.WriteFileAtomic(filepath.Join(dir, runfolder.Config), r.Config, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", runfolder.Config, err)
		}
	}
	return nil
}

// WriteDir writes the shrunk run of a shrink of from into out: the run
// folder and shrink.json, what `lockjepsen shrink` and the workshop leave.
func (res *Result) WriteDir(from, out string) error {
	if err := res.Shrunk.Write(out); err != nil {
		return err
	}
	if err := runfolder.WriteJSON(filepath.Join(out, runfolder.Shrink), res.Record(from)); err != nil {
		return fmt.Errorf("write %s: %w", runfolder.Shrink, err)
	}
	return nil
}

// LoadPart reads a run folder for a shrink of the violation o picks, in two
// passes over history.jsonl, so that what is held grows with one key, not
// with the run: the first streams every event into the checker (which holds
// operations, not events) and judges the whole run; the second keeps that
// violation's key's events and every fault event, and the resource's
// attempts of the tokens they name. Load holds every event: 930 MiB at 1M
// events, so about 9 GiB at 10M. A shrink that finds the key's operations
// alone do not show the violation (a token shared with another key) reads
// the whole folder with Load.
func LoadPart(dir string, o Options) (*Run, error) {
	began := time.Now()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	if err := o.validKind(); err != nil {
		return nil, err
	}
	r := &Run{}
	var err error
	if r.Config, err = os.ReadFile(filepath.Join(dir, runfolder.Config)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	cat := o.Check.Marks
	if o.Check, err = r.CheckOptions(); err != nil {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	o.Check.Marks = cat
	hpath := filepath.Join(dir, runfolder.History)
	b := checker.NewBuilder()
	if st, err := os.Stat(hpath); err == nil {
		// As check's reader does (an operation is two lines of 150-250
		// bytes): the operations' table allocated once, not grown by copies,
		// each of which held the old table and the new at once.
		b.Grow(int(st.Size() / 350))
	}
	var all Counts
	origin := int64(0)
	keys := map[string]bool{}
	err = scanFile(hpath, func(e *history.Event) error {
		if all.Events == 0 || e.Time < origin {
			origin = e.Time
		}
		countEvent(&all, e)
		if e.IsClient() {
			keys[e.Key] = true
		}
		return b.Add(e)
	})
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s has no %s: not a lockjepsen run directory", dir, runfolder.History)
	case err != nil:
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	case all.Events == 0:
		return nil, fmt.Errorf("%s is empty: the run stopped before any operation; nothing to shrink", hpath)
	}
	if o.Key != "" && !keys[o.Key] {
		return nil, &UnknownKeyError{Key: o.Key, History: hpath, Keys: slices.Sorted(maps.Keys(keys))}
	}
	var idx *checker.AttemptIndex
	err = checker.ScanAttemptsFile(filepath.Join(dir, runfolder.Resource), func(a *history.Attempt) {
		if idx == nil {
			idx = checker.NewAttemptIndex()
		}
		idx.Add(a)
		all.Attempts++
	})
	if err != nil {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	opts := o.Check.Defaults()
	opts.Pictures = false
	whole := checker.CheckHistory(b.History(), idx, opts)
	report.Explain(whole, opts.Marks)
	b, idx = nil, nil
	v, err := pick(whole, o.Kind, o.Key)
	if err != nil {
		return nil, err
	}
	tokens := map[string]bool{}
	err = scanFile(hpath, func(e *history.Event) error {
		if !e.IsClient() || e.Key == v.Key {
			r.Events = append(r.Events, *e)
			if e.Token != "" {
				tokens[e.Token] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	history.Sort(r.Events)
	err = checker.ScanAttemptsFile(filepath.Join(dir, runfolder.Resource), func(a *history.Attempt) {
		if tokens[a.Token] {
			r.Attempts = append(r.Attempts, *a)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	if r.Nemesis, err = history.ReadFile(filepath.Join(dir, runfolder.Nemesis)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot shrink %s: %w", dir, err)
	}
	r.part = &partOf{dir: dir, whole: whole, counts: all, origin: origin}
	r.read = time.Since(began)
	return r, nil
}

// scanFile streams a history file through fn (history.Scan: every rule, the
// line of a malformed one).
func scanFile(path string, fn func(*history.Event) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return history.Scan(f, path, fn)
}
