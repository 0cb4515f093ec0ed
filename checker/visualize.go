package checker

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// draw writes porcupine's HTML for one failed partition, with the nemesis
// faults in force during the window and the witness as annotations, and
// returns the file name relative to dir.
func draw(dir, prefix string, kc *keyCheck, fs []fault, marks []porcupine.Annotation, t0 int64, used map[string]bool) (string, error) {
	name := runfolder.PorcupinePage(prefix, kc.key)
	for i := 2; used[name]; i++ {
		name = runfolder.PorcupinePage(prefix, fmt.Sprintf("%s-%d", kc.key, i))
	}
	used[name] = true
	var anns []porcupine.Annotation
	for _, f := range fs {
		if f.end < kc.from || f.start > kc.to {
			continue
		}
		end := min(f.end, kc.to)
		bg := "#f6c6c6"
		if f.start == f.end {
			bg = "#f9e79f"
		}
		anns = append(anns, porcupine.Annotation{
			Tag: "nemesis", Start: max(f.start, kc.from), End: end,
			Description:     f.String(),
			Details:         fmt.Sprintf("%s from %s to %s", f.String(), secs(f.start, t0), healed(f.end, t0)),
			BackgroundColor: bg,
		})
	}
	anns = append(anns, marks...)
	kc.info.AddAnnotations(anns)
	path := filepath.Join(dir, name)
	if err := porcupine.VisualizePath(kc.model, *kc.info, path); err != nil {
		return "", fmt.Errorf("draw %s: %w", path, err)
	}
	return name, nil
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

// ensureDir makes sure the pictures have somewhere to go.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
