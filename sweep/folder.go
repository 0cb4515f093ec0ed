package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// The files of a sweep folder; each trial folder under Trials is a run
// folder (package runfolder) plus TrialRecord and TrialLog.
const (
	PlanFile    = "plan.json"      // the matrix, fixed for --resume
	Trials      = "trials"         // trials/<cell>/<n>/
	TrialRecord = "trial.json"     // a trial's status, exit code and wall time
	TrialLog    = runfolder.RunLog // the runner's phase log of one trial, written by the runner
	ReportJSON  = "sweep.json"     // every aggregate (Report)
	ReportCSV   = "sweep.csv"      // one row per cell (docs/sweep.md)
	// Evidence holds, per red cell, a trial that showed the violation,
	// shrunk (evidence/<cell>/: lockjepsen sweep evidence writes it): a few
	// kilobytes a cell, so a committed row keeps it where it cannot keep
	// its trials.
	Evidence = "evidence"
)

// EvidenceDir is the folder of a cell's evidence in the sweep folder dir.
func EvidenceDir(dir, cell string) string { return filepath.Join(dir, Evidence, cell) }

// writePlan writes a sweep's plan.json, atomically.
func writePlan(path string, p Plan) error { return runfolder.WriteJSON(path, p) }

// ErrNoTrials is returned by Publish for a report computed from no trial
// folder at all, when the sweep folder already holds a report.
var ErrNoTrials = errors.New("no trial folders")

// TrialFolders is how many trial folders the report was computed from,
// including those that gave no verdict or were interrupted.
func (r *Report) TrialFolders() int {
	n := 0
	for _, c := range r.Cells {
		n += c.Trials + c.TrialsFailed + c.Interrupted
	}
	return n
}

// Publish writes a report's sweep.json, sweep.csv, plots and index.html. It
// refuses (ErrNoTrials) to replace a sweep's existing report with one
// computed from zero trial folders: that is a folder whose trials were moved
// or a mistyped --resume, and writing "0 trial(s)" over the figures would
// lose them.
func Publish(dir string, r *Report) error {
	if r.TrialFolders() == 0 {
		if _, err := os.Lstat(filepath.Join(dir, ReportJSON)); err == nil {
			return fmt.Errorf("%s: %w under %s, yet it holds a report: leaving %s, %s, the plots and index.html as they are",
				dir, ErrNoTrials, filepath.Join(dir, Trials), ReportJSON, ReportCSV)
		}
	}
	if err := r.WriteFiles(dir); err != nil {
		return err
	}
	if err := writeTable(dir, r); err != nil {
		return err
	}
	return WriteReport(dir, r)
}

// LockFile is held (flock) by the one sweep that runs a folder's trials.
const LockFile = "sweep.lock"

// ErrUnclaimed is returned, with a usable release, when the folder's
// filesystem takes no locks: the sweep may go on, with a warning.
var ErrUnclaimed = errors.New("the sweep folder cannot be locked")

// Claim takes a sweep folder for this process until release is called or the
// process ends, and refuses a folder another sweep holds. Two sweeps on one
// folder (a --resume typed while the first still ran) each take the trials
// they find unfinished, and the second renames the first's in-flight trials
// as interrupted: both runs' records end up mixed in one cell. flock is used
// because the kernel drops it with its holder, so a SIGKILLed sweep leaves no
// stale claim to clear by hand; the pid in the file is only for the message.
func Claim(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("claim the sweep folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another sweep"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who = "another sweep (pid " + pid + ")"
			}
			return nil, fmt.Errorf("%s is being run by %s: wait for it to end or stop it with Ctrl-C (kill -INT), then --resume %s; two sweeps on one folder would run the same trials twice", dir, who, dir)
		}
		if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) {
			// A shared volume without locks (some NFS setups): the sweep
			// still runs, unguarded, and the caller says so.
			return func() {}, fmt.Errorf("%w on %s (%v): nothing stops a second sweep on this folder", ErrUnclaimed, dir, err)
		}
		return nil, fmt.Errorf("claim the sweep folder %s: %w", dir, err)
	}
	// The pid is written once the lock is held; a refused sweep that reads
	// the file in the instant before may name the previous holder's pid,
	// which is why the pid only informs the message and decides nothing.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	return func() { f.Close() }, nil
}
