package workshop

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// A run whose host wall clock stepped (config.json's wall_step_ns) shows the
// machine, not the lesson: Play runs the step once more and says why. A run
// without a step is played once. The run function is a stand-in that writes
// the files a run folder's evidence is read from: this is Play's logic, not
// a run.
func TestAStepWhoseHostClockSteppedRunsAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []int64 // wall_step_ns of each call's run
		calls int
	}{
		{"no step: once", []int64{0, 0}, 1},
		{"a 9.1 s step: once more", []int64{9_114_000_000, 0}, 2},
		{"a step again: no third run", []int64{95_000_000, 95_000_000, 0}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			run := func(_ context.Context, _ []string, dir string, _ io.Writer) (string, int, error) {
				step := tc.steps[calls]
				calls++
				for name, body := range map[string]string{
					runfolder.Config:  `{"wall_step_ns": ` + strconv.FormatInt(step, 10) + `}`,
					runfolder.Results: `{}`,
					runfolder.History: `{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}` + "\n",
				} {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
						return "", 0, err
					}
				}
				return "", 0, nil
			}
			var out strings.Builder
			l := Lab{N: 9, Title: "t", Question: "q?", Steps: []Step{{Name: "s", Kind: KindRun, Args: []string{"--scenario", "baseline"},
				Claims: []Claim{{Text: "always", Check: func(*Evidence) (string, bool) { return "", true }}}}}}
			Play(context.Background(), l, Options{Dir: t.TempDir(), Run: run, Out: &out})
			if calls != tc.calls {
				t.Errorf("%d runs, want %d:\n%s", calls, tc.calls, out.String())
			}
			if said := strings.Contains(out.String(), "wall clock moved"); said != (tc.calls == 2) {
				t.Errorf("the replay said (%v) why:\n%s", said, out.String())
			}
		})
	}
}
