package sweep

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// TestKeepEvidence: a sweep shrinks a cell's first invalid trial into the
// cell's evidence folder as the trial finishes, once: not a valid or an
// unknown trial, not when the cell has evidence, and a failed shrink leaves
// no half-written folder a resume would take for evidence.
func TestKeepEvidence(t *testing.T) {
	for _, tt := range []struct {
		name     string
		valid    string // the trial's verdict; "" for none loaded
		existing bool   // the cell has evidence already
		fail     bool   // the shrink fails
		calls    int
		kept     bool
	}{
		{"invalid trial", "false", false, false, 1, true},
		{"valid trial with a stale write let in", `true,"stale_writes":{"accepted":1}`, false, false, 1, true},
		{"valid trial", "true", false, false, 0, false},
		{"unknown trial", `"unknown"`, false, false, 0, false},
		{"no result loaded", "", false, false, 0, false},
		{"evidence already kept", "false", true, false, 0, true},
		{"shrink fails", "false", false, true, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			trial := filepath.Join(dir, Trials, "c.f", "0")
			if err := os.MkdirAll(trial, 0o755); err != nil {
				t.Fatal(err)
			}
			tr := &Trial{Dir: trial}
			if tt.valid != "" {
				tr.Result = new(checker.Result)
				if err := json.Unmarshal([]byte(`{"valid":`+tt.valid+`}`), tr.Result); err != nil {
					t.Fatal(err)
				}
			}
			ev := EvidenceDir(dir, "c.f")
			if tt.existing {
				if err := os.MkdirAll(ev, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ev, runfolder.Index), []byte("kept"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			calls := 0
			var progress strings.Builder
			opt := Options{Progress: &progress, Evidence: func(tr, to, kind string) error {
				calls++
				if tr != trial || to != ev {
					t.Errorf("shrink %s into %s, want %s into %s", tr, to, trial, ev)
				}
				if want, _ := EvidenceKind(resultOf(tt.valid)); kind != want {
					t.Errorf("shrink keeping %q, want %q", kind, want)
				}
				if err := os.MkdirAll(to, 0o755); err != nil {
					return err
				}
				if tt.fail {
					return errors.New("shrink failed")
				}
				return os.WriteFile(filepath.Join(to, runfolder.Index), []byte("shrunk"), 0o644)
			}}
			var mu sync.Mutex
			keepEvidence(dir, "c.f", tr, opt, &mu, map[string]bool{})
			_, err := os.Stat(filepath.Join(ev, runfolder.Index))
			if calls != tt.calls || (err == nil) != tt.kept {
				t.Fatalf("%d shrink(s), evidence kept %v; want %d, %v", calls, err == nil, tt.calls, tt.kept)
			}
			if tt.fail && (!strings.Contains(progress.String(), "not kept: shrink failed") || dirExists(ev)) {
				t.Fatalf("a failed shrink: progress %q, folder left %v", progress.String(), dirExists(ev))
			}
		})
	}
}

func dirExists(p string) bool { _, err := os.Stat(p); return err == nil }

// resultOf is the result a case's verdict JSON reads as.
func resultOf(valid string) *checker.Result {
	r := new(checker.Result)
	_ = json.Unmarshal([]byte(`{"valid":`+valid+`}`), r)
	return r
}
