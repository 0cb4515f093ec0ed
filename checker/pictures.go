package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Picture is what porcupine needs to draw one failed partition: its model
// and the linearization info of the window around the violation, annotated
// with the faults in force and the witness. The checker only gathers it, as
// porcupine's own CheckOperationsVerbose does; report draws it.
type Picture struct {
	Affects string // "lock" or "resource": which check the partition belongs to
	Key     string
	Model   porcupine.Model
	Info    porcupine.LinearizationInfo
	// Annotations mark the faults in force and the violation on the page.
	Annotations []porcupine.Annotation
}

// pictures gathers a picture for every partition that failed.
func pictures(lockChecks, resChecks []*keyCheck, fs []fault, t0 int64) []Picture {
	var out []Picture
	for _, group := range []struct {
		affects string
		checks  []*keyCheck
	}{{"lock", lockChecks}, {"resource", resChecks}} {
		for _, kc := range group.checks {
			if kc.info == nil {
				continue
			}
			var marks []porcupine.Annotation
			for _, w := range kc.witnesses {
				if w.end >= kc.from && w.start <= kc.to {
					marks = append(marks, witnessMark(w, t0))
				}
			}
			if kc.stuck != nil {
				marks = append(marks, porcupine.Annotation{Tag: "violation", Start: kc.stuck.Call, End: kc.stuck.Call,
					Description: "cannot be explained", BackgroundColor: "#e74c3c", TextColor: "#ffffff"})
			}
			for _, p := range kc.lost {
				marks = append(marks, porcupine.Annotation{Tag: "violation", Start: max(p[0].Call, p[1].Call),
					End: max(p[0].Call, p[1].Call), Description: "lost update", BackgroundColor: "#e74c3c", TextColor: "#ffffff"})
			}
			for _, r := range kc.rewinds {
				marks = append(marks, porcupine.Annotation{Tag: "violation", Start: r.stale.Write.Call,
					End: r.stale.Write.Call, Description: "rewind", BackgroundColor: "#e74c3c", TextColor: "#ffffff"})
			}
			out = append(out, Picture{Affects: group.affects, Key: kc.key, Model: kc.model, Info: *kc.info,
				Annotations: append(faultMarks(kc, fs, t0), marks...)})
		}
	}
	return out
}

// faultMarks annotates the nemesis faults in force during the window.
func faultMarks(kc *keyCheck, fs []fault, t0 int64) []porcupine.Annotation {
	var anns []porcupine.Annotation
	for _, f := range fs {
		if f.end < kc.from || f.start > kc.to {
			continue
		}
		bg := "#f6c6c6"
		if f.start == f.end {
			bg = "#f9e79f"
		}
		anns = append(anns, porcupine.Annotation{
			Tag: "nemesis", Start: max(f.start, kc.from), End: min(f.end, kc.to),
			Description:     f.String(),
			Details:         fmt.Sprintf("%s from %s to %s", f.String(), secs(f.start, t0), healed(f.end, t0)),
			BackgroundColor: bg,
		})
	}
	return anns
}

func healed(t, t0 int64) string {
	if t == never {
		return "the end (never healed)"
	}
	return secs(t, t0)
}

func witnessMark(w witness, t0 int64) porcupine.Annotation {
	return porcupine.Annotation{
		Tag: "violation", Start: w.start, End: w.end,
		Description: w.kind, Details: fmt.Sprintf("%s on %s from %s to %s", w.kind, w.key, secs(w.start, t0), secs(w.end, t0)),
		BackgroundColor: "#e74c3c", TextColor: "#ffffff",
	}
}

func secs(t, t0 int64) string { return fmt.Sprintf("%.3f s", rel(t, t0)) }
