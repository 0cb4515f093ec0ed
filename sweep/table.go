package sweep

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// TableFile is the decision table of a sweep, in markdown: one row per
// configuration × fault, n/a pairs included, for a README to include verbatim.
const TableFile = "table.md"

// ratio is "k/n = p% (lo–hi%)", or "–" without an opportunity.
func ratio(k, n int, p *float64, lo, hi float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%d/%d = %.0f%% (%.0f–%.0f%%)", k, n, 100**p, 100*lo, 100*hi)
}

// DecisionTable renders the report as the seed's decision table: per
// deployment (configuration) and fault kind, P(double grant) and P(stale
// write accepted) per opportunity with their 95% Wilson intervals, granted
// acquire latency p50/p99, and availability (the acquires answered by a
// working lock: neither refused by an error nor timed out). A pair the fault
// kind has no counterpart for is a row of its own, n/a with the reason.
func DecisionTable(r *Report) string {
	var b strings.Builder
	b.WriteString("| deployment | fault (nemesis fault) | trials | opportunities | P(double grant) (95% CI) | P(stale write accepted) (95% CI) | stale writes accepted / attempted, lost updates, rewinds | granted acquire p50 / p99 | availability (refused, timed out) | liveness: stuck locks, regranted p50 / p99 after a fault |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	parallel := 0
	for _, c := range r.Plan.Configs {
		for _, f := range r.Plan.Faults {
			cs, na := r.at(c.Name, f.Name)
			if cs == nil {
				if na != nil {
					fmt.Fprintf(&b, "| %s | %s | – | – | n/a | n/a | – | – | n/a: %s | – |\n", c.Name, f.Name, na.Reason)
				}
				continue
			}
			lat := "–"
			if cs.AcquireOKMs.Count > 0 {
				lat = fmt.Sprintf("%s / %s ms", ms(cs.AcquireOKMs.P50), ms(cs.AcquireOKMs.P99))
			}
			avail := "–"
			if cs.Acquires.Total > 0 {
				// The unanswered share leaves out the unknowns a majority had
				// refused (Acquires.UnknownRefused), as Availability does.
				noAnswer := float64(cs.Acquires.Unknown-cs.Acquires.UnknownRefused) / float64(cs.Acquires.Total)
				avail = fmt.Sprintf("%.1f%% (%.1f%%, %.1f%%)", 100*cs.Availability, 100*cs.RefusedShare, 100*noAnswer)
			}
			trials := fmt.Sprint(cs.Trials)
			if cs.TrialsFailed > 0 {
				trials += fmt.Sprintf(" (+%d failed)", cs.TrialsFailed)
			}
			if cs.StoppedAtCap {
				trials += fmt.Sprintf(", stopped at the cap of %d short of the rule", cs.MaxTrials)
			}
			opps := fmt.Sprintf("%d %s(s)", cs.Opportunities, cs.Unit)
			if cs.Closed > 0 {
				opps += fmt.Sprintf(", %d closed by the setting", cs.Closed)
			}
			if cs.Windows > 0 {
				opps += fmt.Sprintf("; %d of %d injections reached the dangerous moment", cs.Reached, cs.Windows)
				if cs.PReached != nil {
					opps += fmt.Sprintf(", a double grant after %d of them (%.0f%%, %.0f-%.0f%%)", cs.ReachedHits,
						100**cs.PReached, 100*cs.PReachedLow, 100*cs.PReachedHigh)
				}
			}
			fmt.Fprintf(&b, "| %s | %s (%s) | %s | %s | %s | %s | %d / %d, %d, %d | %s | %s | %s |\n",
				c.Name, f.Name, strings.Join(cs.NemesisKind, ", "), trials, opps,
				ratio(cs.Hits, cs.Opportunities, cs.P, cs.PLow, cs.PHi),
				ratio(cs.StaleHits, cs.Opportunities, cs.PStale, cs.PStaleLow, cs.PStaleHigh),
				cs.StaleWrites.Accepted, cs.StaleWrites.Attempted, cs.LostUpdates, cs.Rewinds, lat, avail, liveness(cs))
			parallel = max(parallel, cs.Parallel)
		}
	}
	if parallel > 1 {
		fmt.Fprintf(&b, "\nFigures %s.\n", ParallelCaveat(parallel))
	}
	return b.String()
}

// liveness is a cell's liveness column: the stuck locks, then how long after
// an injection every key asked for was granted again.
func liveness(cs *CellStats) string {
	if !cs.LivenessMeasured {
		return "not counted (aggregated before liveness was)"
	}
	s := fmt.Sprintf("%d stuck", cs.StuckLocks)
	if cs.StuckLocks > 0 {
		s += fmt.Sprintf(" (in %d trial(s))", cs.StuckTrials)
	}
	if cs.RegrantMs.Count > 0 {
		s += fmt.Sprintf("; %s / %s ms", ms(cs.RegrantMs.P50), ms(cs.RegrantMs.P99))
	}
	if cs.NoRegrant > 0 {
		s += fmt.Sprintf("; %d fault(s) after which a key was never granted again", cs.NoRegrant)
	}
	if cs.OrphanedMeasured {
		if o := cs.OrphanedMs; o.Count > 0 {
			s += fmt.Sprintf("; %d orphaned span(s) (in %d trial(s)), p50 %s / max %s ms", o.Count, cs.OrphanedTrials, ms(o.P50), ms(o.Max))
		} else {
			s += "; 0 orphaned spans"
		}
	}
	return s
}

// ms prints a latency with the precision it needs: 0.31, 7.3, 143.
func ms(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// writeTable writes table.md into the sweep folder.
func writeTable(dir string, r *Report) error {
	return runfolder.WriteAtomic(filepath.Join(dir, TableFile), 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, DecisionTable(r))
		return err
	})
}
