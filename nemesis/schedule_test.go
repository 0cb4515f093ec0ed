package nemesis

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func params(seed int64, faults ...string) PlanParams {
	return PlanParams{
		Faults: faults, Seed: seed, TimeLimit: 60 * time.Second, Interval: 4 * time.Second,
		Warmup: 3 * time.Second, Settle: time.Second, TTL: 3 * time.Second, DownAfter: time.Second,
	}
}

func TestSameSeedSameSchedule(t *testing.T) {
	all := Names()
	for _, seed := range []int64{1, 2, 42, -7} {
		a, err := Plan(params(seed, all...))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Plan(params(seed, all...))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: schedules differ:\n%v\n%v", seed, a, b)
		}
		if len(a) < 3 {
			t.Fatalf("seed %d: only %d faults in 60 s", seed, len(a))
		}
	}
	a, _ := Plan(params(1, all...))
	b, _ := Plan(params(2, all...))
	if reflect.DeepEqual(a, b) {
		t.Fatal("seeds 1 and 2 gave the same schedule")
	}
}

func TestScheduleFitsAndDoesNotOverlap(t *testing.T) {
	p := params(9, Names()...)
	steps, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	var end time.Duration
	for i, s := range steps {
		if s.At < p.Warmup || s.At < end {
			t.Fatalf("step %d (%v) starts at %v, before the warm-up or the previous fault's end %v", i, s.Fault, s.At, end)
		}
		end = s.At + mustLookup(t, s.Fault).span(s, p)
		if end > p.TimeLimit-p.Settle {
			t.Fatalf("step %d ends at %v, past the time limit", i, end)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		p    PlanParams
		want string
	}{
		{"unknown fault", params(1, "meteor"), `unknown fault "meteor"`},
		{"no room", func() PlanParams { p := params(1, "kill-primary"); p.TimeLimit = 4 * time.Second; return p }(), "--time-limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Plan(tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	if s, err := Plan(params(1)); err != nil || s != nil {
		t.Fatalf("no faults: %v, %v", s, err)
	}
}

func mustLookup(t *testing.T, name string) *Fault {
	t.Helper()
	f, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A fault event shared by several faults (every failover fault logs "kill")
// must mean the same thing in each: one heal, one cause.
func TestMarksAgree(t *testing.T) {
	seen := map[string]Mark{}
	for _, f := range catalog {
		if len(f.Marks) == 0 {
			t.Errorf("%s logs no fault event: the checker could not see it in force", f.Name)
		}
		for _, m := range f.Marks {
			if m.Heal == "" || m.Cause == "" {
				t.Errorf("%s: mark %+v lacks a heal or a cause", f.Name, m)
			}
			if o, ok := seen[m.Event]; ok && o != m {
				t.Errorf("%s: event %q means %+v here and %+v elsewhere", f.Name, m.Event, m, o)
			}
			seen[m.Event] = m
		}
	}
}

func TestBackToBackSchedule(t *testing.T) {
	p := params(3, "cut-replication", "fast-restart")
	p.BackToBack = true
	steps, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	// Planned as if each fault took MinSpan: many more steps than spans allow.
	if len(steps) < int((p.TimeLimit-p.Warmup-p.Settle)/(MinSpan+MaxGap)) {
		t.Errorf("only %d steps in a back-to-back schedule of %v", len(steps), p.TimeLimit)
	}
	for i, s := range steps {
		if s.Gap < 0 || s.Gap > MaxGap {
			t.Errorf("step %d: gap %v outside [0, %v]", i, s.Gap, MaxGap)
		}
	}
	again, _ := Plan(p)
	if !reflect.DeepEqual(steps, again) {
		t.Error("same seed, different back-to-back schedule")
	}
}
