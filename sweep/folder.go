package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
)

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
