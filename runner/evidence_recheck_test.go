package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Every shrunk trial committed as a sweep cell's evidence checks again, with
// this build's checker and fault catalog, to the verdicts, violations and
// causes its results.json holds: real histories from every deployment and
// fault, kept small, against which a change to the checker's rules or to the
// vocabulary of fault events (nemesis.Catalog) shows at once. A deliberate
// change of verdict re-checks the folders (lockjepsen check) in its commit.
func TestCommittedEvidenceChecksAsCommitted(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join("..", "results", "*", "evidence", "*"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "results", "*", "*", "evidence", "*"))
	dirs = append(dirs, more...)
	checked := 0
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, runfolder.History)); err != nil {
			continue
		}
		checked++
		t.Run(strings.TrimPrefix(dir, "../results/"), func(t *testing.T) {
			want, err := verdictOf(dir)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			for _, f := range []string{runfolder.History, runfolder.Resource, runfolder.Config, runfolder.Nemesis} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := CheckDir(tmp, CheckOptions{NoHTML: true}); err != nil {
				t.Fatal(err)
			}
			got, err := verdictOf(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("checked again:\n%s\ncommitted:\n%s", got, want)
			}
		})
	}
	if checked < 50 {
		t.Fatalf("%d evidence folders found under results/; the committed rows hold about 80", checked)
	}
}

// verdictOf is what a run folder's results.json says, in one comparable
// string: the three verdicts and each violation's kind, key and cause.
func verdictOf(dir string) (string, error) {
	var r checker.Result
	if err := runfolder.ReadJSON(filepath.Join(dir, runfolder.Results), &r); err != nil {
		return "", err
	}
	vs := make([]string, 0, len(r.Violations))
	for _, v := range r.Violations {
		vs = append(vs, fmt.Sprintf("%s %s %s", v.Kind, v.Key, v.Cause))
	}
	slices.Sort(vs)
	b, err := json.Marshal(vs)
	return fmt.Sprintf("valid %v, lock %v, resource %v, violations %s", r.Valid, r.Lock.Valid, r.Resource.Valid, b), err
}
