package sweep

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// PublishTo writes the report of the sweep folder src into dst: a folder that
// keeps a row of results in the repository without its trials, which are too
// large to commit. It copies the plan and each cell's evidence, and writes
// sweep.json (naming dst as its folder, so that no page names the machine the
// sweep ran on), the CSV, the table, the plots and index.html. The rest of
// dst stays: its README.md, the trial folders its README cites. A cell the
// new sweep kept no evidence for keeps dst's while it still has a hit;
// evidence of a cell with none is removed, or a green cell would link a
// violation of an earlier sweep.
func PublishTo(src, dst string) (*Report, error) {
	if SameFolder(src, dst) {
		return nil, fmt.Errorf("publish %s into itself: give the sweep's folder and the row's, e.g. sweep publish --to results/rows/NAME %s", src, src)
	}
	rep, err := ReadReport(src)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("publish into %s: %w", dst, err)
	}
	if err := copyFile(filepath.Join(src, PlanFile), filepath.Join(dst, PlanFile)); err != nil {
		return nil, err
	}
	for _, c := range rep.Cells {
		from, to := EvidenceDir(src, c.Cell), EvidenceDir(dst, c.Cell)
		switch _, err := os.Stat(filepath.Join(from, runfolder.Index)); {
		case err == nil:
			if err := os.RemoveAll(to); err != nil {
				return nil, err
			}
			if err := copyTree(from, to); err != nil {
				return nil, fmt.Errorf("copy %s's evidence: %w", c.Cell, err)
			}
		case c.Hits == 0 && c.StaleHits == 0:
			if err := os.RemoveAll(to); err != nil {
				return nil, err
			}
		}
	}
	rep.Dir = dst
	return rep, Publish(dst, rep)
}

// SameFolder says whether two paths name one folder.
func SameFolder(a, b string) bool { return abs(a) == abs(b) }

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return runfolder.WriteFileAtomic(to, b, 0o644)
}
