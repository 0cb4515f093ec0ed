package shrink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeRuns stands for the runner in the schedule search (pure logic): a
// schedule reproduces when it holds every needed fault, lasts at least
// need, and the seed is one of those that show it.
type fakeRuns struct {
	needs []string
	need  time.Duration
	shows func(seed int64) bool
	runs  []string // every run, "schedule seed"
	fail  int      // the run number that returns an error (0: none)
}

func (f *fakeRuns) try(_ context.Context, s Schedule, seed int64) (bool, error) {
	f.runs = append(f.runs, s.key())
	if len(f.runs) == f.fail {
		return false, errors.New("cluster did not come up")
	}
	for _, n := range f.needs {
		if !slices.ContainsFunc(s.Faults, func(x Fault) bool { return x.Name == n }) {
			return false, nil
		}
	}
	return s.TimeLimit >= f.need && f.shows(seed), nil
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func TestShrinkSchedule(t *testing.T) {
	run := Schedule{TimeLimit: 25 * time.Second, Faults: []Fault{
		{"cut-replication", 3 * time.Second}, {"kill-primary", sec(12.5)}, {"pause-replicas", 19 * time.Second},
	}}
	floor := func(faults []Fault) (time.Duration, error) {
		var end time.Duration
		for _, f := range faults {
			end = max(end, f.At+8*time.Second)
		}
		return max(end, 5*time.Second), nil
	}
	odd := func(seed int64) bool { return seed%2 == 1 }
	every := func(int64) bool { return true }
	tests := []struct {
		name      string
		needs     []string
		need      time.Duration
		shows     func(int64) bool
		min       int
		wantFault []string
		wantLimit time.Duration
		runs      int // a candidate stops at its min-th reproduction, or once the seeds left cannot make min
	}{
		// The kept fault's floor (3 s + 8 s) already reproduces.
		{"one fault, the floor holds", []string{"cut-replication"}, 9 * time.Second, every, 1, []string{"cut-replication"}, 11 * time.Second, 2},
		// Bisection between the floor (20.5 s) and 25 s: 22.5 s fails, 23.5 s holds.
		{"a later fault, bisected time", []string{"kill-primary"}, 23 * time.Second, every, 1, []string{"kill-primary"}, sec(23.5), 18},
		{"two faults needed", []string{"cut-replication", "kill-primary"}, 0, every, 1, []string{"cut-replication", "kill-primary"}, sec(20.5), 27},
		// 3 of seeds 1..5 show it (1, 3, 5): holds with --min 3, not 4.
		{"three of five seeds", []string{"cut-replication"}, 0, odd, 3, []string{"cut-replication"}, 11 * time.Second, 10},
		{"four of five: nothing smaller holds", []string{"cut-replication"}, 0, odd, 4, []string{"cut-replication", "kill-primary", "pause-replicas"}, 25 * time.Second, 18},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRuns{needs: tt.needs, need: tt.need, shows: tt.shows}
			res, err := ShrinkSchedule(context.Background(), run, RerunOptions{
				Seeds: []int64{1, 2, 3, 4, 5}, Min: tt.min, MinTimeLimit: floor, Resolution: time.Second, Try: f.try,
			})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, x := range res.After.Faults {
				names = append(names, x.Name)
			}
			if !slices.Equal(names, tt.wantFault) || res.After.TimeLimit != tt.wantLimit {
				t.Fatalf("after %v, want %v over %v (tried %+v)", res.After, tt.wantFault, tt.wantLimit, res.Tried)
			}
			// The kept faults keep their offsets.
			for _, x := range res.After.Faults {
				if !slices.Contains(run.Faults, x) {
					t.Errorf("%v is not one of the run's faults at its offset", x)
				}
			}
			if res.Runs != len(f.runs) || res.Runs != tt.runs {
				t.Errorf("%d runs (%d counted), want %d", len(f.runs), res.Runs, tt.runs)
			}
			for _, tr := range res.Tried {
				// A candidate stops at its min-th reproduction, or once the
				// seeds left cannot make it.
				n, r := len(tr.Seeds), len(tr.Reproduced)
				if tr.Holds != (r >= tt.min) || (tr.Holds && r != tt.min) || (!tr.Holds && r+5-n >= tt.min) {
					t.Errorf("candidate %v: %d of %d seeds reproduced, holds %v", tr.Schedule, r, n, tr.Holds)
				}
				if !slices.Equal(tr.Seeds, []int64{1, 2, 3, 4, 5}[:n]) {
					t.Errorf("candidate %v ran seeds %v, want 1, 2, ... in order", tr.Schedule, tr.Seeds)
				}
			}
			if last := res.Last(); (last == nil) != (res.After.key() == run.key()) || (last != nil && !last.Holds) {
				t.Errorf("the verdict on the result: %+v", last)
			}
		})
	}
}

// A run that cannot be carried out ends the search with what was found.
func TestShrinkScheduleStopsOnError(t *testing.T) {
	run := Schedule{TimeLimit: 25 * time.Second, Faults: []Fault{{"cut-replication", 3 * time.Second}, {"kill-primary", 12 * time.Second}}}
	f := &fakeRuns{needs: []string{"cut-replication"}, shows: func(int64) bool { return true }, fail: 2}
	res, err := ShrinkSchedule(context.Background(), run, RerunOptions{
		Seeds: []int64{1, 2, 3}, Min: 1, Try: f.try,
		MinTimeLimit: func([]Fault) (time.Duration, error) { return 11 * time.Second, nil },
	})
	if err == nil || !strings.Contains(err.Error(), "did not come up") {
		t.Fatalf("error %v, want the run's", err)
	}
	if want := (Schedule{Faults: run.Faults[:1], TimeLimit: run.TimeLimit}); len(f.runs) != 2 || res == nil || res.After.key() != want.key() {
		t.Fatalf("after an error: %d runs, result %+v", len(f.runs), res)
	}
	if _, err := ShrinkSchedule(context.Background(), run, RerunOptions{Seeds: []int64{1}, Min: 2, Try: f.try}); err == nil {
		t.Fatal("--min 2 of 1 seed accepted")
	}
}
