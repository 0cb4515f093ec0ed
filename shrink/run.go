package shrink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
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
