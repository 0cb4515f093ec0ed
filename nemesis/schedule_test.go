package nemesis

import (
	"reflect"
	"regexp"
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
	// -7 drew failover-coordinated (a 20 s span) twice once Redlock's faults
	// left this package's own catalog: 2 faults in 60 s, a legal schedule.
	for _, seed := range []int64{1, 2, 42, -8} {
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
		end = s.At + mustLookup(t, s.Fault).Span(s, p)
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

// A --faults-at equal to a run's recorded schedule plans that schedule
// again: the offsets given, every other field (durations, clock offsets,
// nodes) drawn from the seed as Plan drew it.
func TestPlanAtRepeatsARecordedSchedule(t *testing.T) {
	for _, tt := range []struct {
		seed   int64
		faults []string
	}{
		{1, []string{"cut-replication"}},
		{7, []string{"pause-replicas", "clock-bump", "kill-primary"}},
		{42, Names()},
	} {
		p := params(tt.seed, tt.faults...)
		want, err := Plan(p)
		if err != nil {
			t.Fatal(err)
		}
		var at []Step
		for _, s := range want {
			at = append(at, Step{At: s.At, Fault: s.Fault})
		}
		got, err := PlanAt(p, at)
		if err != nil {
			t.Fatalf("seed %d: the recorded schedule is refused: %v", tt.seed, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: PlanAt gave\n%v\nwant Plan's\n%v", tt.seed, got, want)
		}
		// Through the flag's text form too.
		parsed, err := ParseFaultsAt(FormatFaultsAt(want))
		if err != nil || !reflect.DeepEqual(parsed, at) {
			t.Fatalf("seed %d: ParseFaultsAt(FormatFaultsAt) = %v, %v; want %v", tt.seed, parsed, err, at)
		}
	}
}

func TestPlanAtErrors(t *testing.T) {
	p := params(1, "cut-replication")
	p.TimeLimit = 25 * time.Second
	span := FailoverSpan(Step{}, p) // 6 s with a 1 s down-after
	tests := []struct {
		name string
		at   string
		want string
	}{
		{"before the warm-up", "2s:cut-replication", "before the 3s warm-up"},
		{"past the time limit", "25s:cut-replication", "past --time-limit 25s: raise --time-limit"},
		{"span past the settle tail", "20s:cut-replication", "use --time-limit 27s or more"},
		{"overlapping spans", "3s:cut-replication,8s:kill-primary", "fires before 3s:cut-replication has run its course (planned until 9s)"},
		{"overlap listed out of order", "8s:kill-primary,3s:cut-replication", "fires before 3s:cut-replication"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, err := ParseFaultsAt(tt.at)
			if err != nil {
				t.Fatal(err)
			}
			_, err = PlanAt(p, at)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("PlanAt(%s): error %v, want %q", tt.at, err, tt.want)
			}
		})
	}
	// The boundaries are allowed: a fault at the end of the warm-up, the
	// next one as the first's span ends, the last one ending at the tail.
	at := []Step{{At: 3 * time.Second, Fault: "cut-replication"}, {At: 3*time.Second + span, Fault: "kill-primary"}}
	steps, err := PlanAt(p, at)
	if err != nil || len(steps) != 2 {
		t.Fatalf("back-to-back spans refused: %v", err)
	}
	if got := MinTimeLimit(p, steps); got != 3*time.Second+2*span+p.Settle {
		t.Errorf("MinTimeLimit %v, want %v", got, 3*time.Second+2*span+p.Settle)
	}
	p.TimeLimit = MinTimeLimit(p, steps)
	if _, err := PlanAt(p, at); err != nil {
		t.Errorf("at MinTimeLimit the schedule is refused: %v", err)
	}
}

func TestParseFaultsAt(t *testing.T) {
	tests := []struct {
		in   string
		want []Step
		err  string
	}{
		{"3.0s:cut-replication,12.5s:kill-primary", []Step{{At: 3 * time.Second, Fault: "cut-replication"}, {At: 12500 * time.Millisecond, Fault: "kill-primary"}}, ""},
		{" 12.5:kill-primary , 3:cut-replication", []Step{{At: 3 * time.Second, Fault: "cut-replication"}, {At: 12500 * time.Millisecond, Fault: "kill-primary"}}, ""},
		{"3s:meteor", nil, `unknown fault "meteor"`},
		{"cut-replication", nil, "want OFFSET:FAULT"},
		{"3s:", nil, "want OFFSET:FAULT"},
		{"3s:cut-replication,", nil, "want OFFSET:FAULT"},
		{"soon:cut-replication", nil, `offset "soon" is not a duration`},
	}
	for _, tt := range tests {
		got, err := ParseFaultsAt(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseFaultsAt(%q): error %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("ParseFaultsAt(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// A time limit too short for one fault names the limit that holds it: the
// one asked for, given, plans a step (it once left out the fault's own
// duration and asked a user who gave 8s for 7s).
func TestTooShortNamesALimitThatWorks(t *testing.T) {
	for _, fault := range []string{"net-latency", "net-timeout", "cut-replication", "pause-client"} {
		for seed := int64(1); seed <= 5; seed++ {
			p := params(seed, fault)
			p.TimeLimit = 4 * time.Second
			_, err := Plan(p)
			if err == nil {
				t.Fatalf("%s: 4s planned a step", fault)
			}
			m := regexp.MustCompile(`use at least (\S+)$`).FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("%s: %v names no limit", fault, err)
			}
			d, perr := time.ParseDuration(m[1])
			if perr != nil {
				t.Fatal(perr)
			}
			p.TimeLimit = d
			if steps, err := Plan(p); err != nil || len(steps) == 0 {
				t.Errorf("%s seed %d: the limit the message named, %v, planned %d steps (%v)", fault, seed, d, len(steps), err)
			}
		}
	}
}
