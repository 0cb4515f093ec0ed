package shrink

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/checkertest"
	// The fault catalog registers the marks of the generator's fault events
	// (cut-replication, kill, restart, ...), as the lockjepsen binary does.
	_ "github.com/lockjepsen/lockjepsen/nemesis"
)

// generated is a run of the shared generator, with its resource log or
// without.
func generated(cfg checkertest.Config, withLog bool) *Run {
	events, attempts, _ := checkertest.Simulate(cfg)
	if !withLog {
		attempts = nil
	}
	return &Run{Events: events, Attempts: attempts}
}

// firstViolation is the violation shrink must keep, found by a check of its
// own: the first of kind, or with none the first that falsifies a verdict.
func firstViolation(t *testing.T, r *Run, kind string) *checker.Violation {
	t.Helper()
	res, err := checker.Check(r.Events, r.Attempts, checker.Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range res.Violations {
		if kind == "" && v.Affects != "none" || v.Kind == kind {
			return &res.Violations[i]
		}
	}
	return nil
}

// On generated histories with one injected fault, shrink always returns a
// history that (a) checks invalid with the same kind on the same key (and
// the same cause), (b) is a sub-history of the input, whole operations and
// faults only, and (c) is 1-minimal (Result.Verify checks all three from
// scratch); and it is smaller than the run.
func TestShrinkKeepsTheViolationAndIsOneMinimal(t *testing.T) {
	tests := []struct {
		name  string
		kind  string // "" : the first violation
		seeds int
		cfg   func(seed int64) checkertest.Config
		log   bool
	}{
		{"injected double grant, one key, resource log", "", 12, func(s int64) checkertest.Config {
			return checkertest.Config{Seed: s, Clients: 2 + int(s%6), Keys: 1, Events: 3000, TTLms: 100 + s%4*50, PInfo: 0.03, PPause: 0.05, Inject: true}
		}, true},
		{"injected double grant, three keys, no resource log", "", 12, func(s int64) checkertest.Config {
			return checkertest.Config{Seed: s, Clients: 4 + int(s%5), Keys: 3, Events: 4000, TTLms: 150, PInfo: 0.05, PPause: 0.02, Inject: true}
		}, false},
		{"failovers that forget the holder", "", 6, func(s int64) checkertest.Config {
			return checkertest.Config{Seed: s, Clients: 8, Keys: 2, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01, PPause: 0.01, Failovers: 2, FailEvery: 15e8}
		}, true},
		{"failovers: the fence turns the newer holder away", "newer-holder-turned-away", 6, func(s int64) checkertest.Config {
			return checkertest.Config{Seed: s, Clients: 8, Keys: 1, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01, Failovers: 2, FailEvery: 15e8}
		}, true},
		{"unfenced stale writes: rewind", "rewind", 10, func(s int64) checkertest.Config {
			return checkertest.Config{Seed: s, Clients: 2 + int(s%5), Keys: 1, Events: 3000, TTLms: 50 + s%5*50, PPause: 0.08, Unfenced: true}
		}, true},
		{"unfenced stale writes: lost update", "lost-update", 10, func(s int64) checkertest.Config {
			return checkertest.Config{Seed: s, Clients: 2 + int(s%5), Keys: 1, Events: 3000, TTLms: 50 + s%5*50, PPause: 0.08, Unfenced: true}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shrunk := 0
			for seed := int64(1); seed <= int64(tt.seeds); seed++ {
				r := generated(tt.cfg(seed), tt.log)
				want := firstViolation(t, r, tt.kind)
				if want == nil {
					continue // this seed's history has no such violation
				}
				res, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}, Kind: tt.kind})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if got := res.Target; got.Kind != want.Kind || got.Key != want.Key || got.Cause != want.Cause {
					t.Fatalf("seed %d: shrank %s, want %s on %s (cause %s)", seed, got, want.Kind, want.Key, want.Cause)
				}
				if err := res.Verify(r, checker.Options{Marks: testMarks}); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if res.After.Events >= res.Before.Events || res.After.Operations == 0 {
					t.Fatalf("seed %d: %v before, %v after", seed, res.Before, res.After)
				}
				if err := wholeUnits(r, res.Shrunk); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for _, k := range res.Kept {
					if k.Without == "" {
						t.Fatalf("seed %d: kept %s without saying why", seed, k.F)
					}
				}
				t.Logf("seed %d: %s: %d -> %d events (%d ops), %d checks, from %d units (seed %d)", seed, res.Target, res.Before.Events, res.After.Events, res.After.Operations, res.Checks, res.From, res.Seed)
				shrunk++
			}
			if shrunk == 0 {
				t.Fatalf("no seed of %d gave a %q to shrink: the generator no longer makes one", tt.seeds, tt.kind)
			}
		})
	}
}

// wholeUnits checks, apart from the package's own pairing, that the shrunk
// run splits nothing: each operation's invoke and completion (the next event
// of its process) are both kept or both gone, and so are each fault's begin
// and its heal (the next event on its node named by its mark's heal).
func wholeUnits(r, shrunk *Run) error {
	kept := map[int64]bool{}
	for _, e := range shrunk.Events {
		kept[e.Index] = true
	}
	invoke := map[history.Process]int64{}
	begun := map[string][]int64{}
	for _, e := range r.Events {
		if !e.IsClient() {
			if m, ok := testMarks.Of(e.F); ok {
				begun[m.Heal+" "+e.Node] = append(begun[m.Heal+" "+e.Node], e.Index)
			} else if q := begun[e.F+" "+e.Node]; len(q) > 0 && e.F != history.NFailover {
				if kept[q[0]] != kept[e.Index] {
					return fmt.Errorf("fault event %d and its heal %s (event %d): one kept, one not", q[0], e.F, e.Index)
				}
				begun[e.F+" "+e.Node] = q[1:]
			}
			continue
		}
		if e.Type == history.Invoke {
			invoke[e.Process] = e.Index
			continue
		}
		if i := invoke[e.Process]; kept[i] != kept[e.Index] {
			return fmt.Errorf("operation %s: invoke %d and completion %d, one kept, one not", e.F, i, e.Index)
		}
	}
	return nil
}

// A legal history has nothing to shrink, with or without its resource log.
func TestShrinkRefusesLegalHistories(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		for _, withLog := range []bool{false, true} {
			r := generated(checkertest.Config{Seed: seed, Clients: 2 + int(seed%7), Keys: 1 + int(seed%3), Events: 3000,
				TTLms: 50 + seed%5*50, PInfo: 0.03, PPause: 0.05}, withLog)
			if _, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}}); !errors.Is(err, ErrValid) {
				t.Fatalf("seed %d (log %v): %v, want %v", seed, withLog, err, ErrValid)
			}
		}
	}
}

// A kind or key the run does not have is refused, naming what it has.
func TestShrinkRefusesAViolationTheRunLacks(t *testing.T) {
	r := generated(checkertest.Config{Seed: 3, Clients: 5, Keys: 2, Events: 3000, TTLms: 150, PInfo: 0.03, PPause: 0.05, Inject: true}, true)
	v := firstViolation(t, r, "")
	if v == nil {
		t.Fatal("the injected history checks valid")
	}
	tests := []struct {
		name, kind, key string
		notFound        bool
	}{
		{"kind absent", "stuck-lock", "", true},
		{"key without it", v.Kind, "lock:{job-none}", true},
		{"unknown kind", "bogus", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}, Kind: tt.kind, Key: tt.key})
			var nf *NotFoundError
			if err == nil || errors.As(err, &nf) != tt.notFound {
				t.Fatalf("err %v, want a NotFoundError: %v", err, tt.notFound)
			}
			if tt.notFound && !slices.ContainsFunc(nf.Have, func(h string) bool { return strings.HasPrefix(h, v.Kind+" on "+v.Key+" (") }) {
				t.Fatalf("the refusal does not name the run's %s: %v", v.Kind, err)
			}
		})
	}
}

// A shrunk run written and read back is the same run: what `lockjepsen
// check` reads of the folder shows the violation too.
func TestShrunkRunRoundTrips(t *testing.T) {
	r := generated(checkertest.Config{Seed: 2, Clients: 8, Keys: 2, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01,
		Failovers: 2, FailEvery: 15e8}, true)
	res, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := res.Shrunk.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Events) != len(res.Shrunk.Events) || len(back.Attempts) != len(res.Shrunk.Attempts) || len(back.Nemesis) != res.After.Nemesis {
		t.Fatalf("read back %d events, %d attempts, %d nemesis lines; wrote %v", len(back.Events), len(back.Attempts), len(back.Nemesis), res.After)
	}
	again := &Result{Target: res.Target, Shrunk: back, Kept: res.Kept}
	if err := again.Verify(r, checker.Options{Marks: testMarks}); err != nil {
		t.Fatal(err)
	}
}

// ddmin finds a 1-minimal subset for tests that need several units,
// including one that is not monotone (a superset may fail).
func TestDDMinIsOneMinimal(t *testing.T) {
	tests := []struct {
		name string
		n    int
		test func([]int) bool
		want []int
	}{
		{"two far apart", 100, func(s []int) bool { return slices.Contains(s, 3) && slices.Contains(s, 77) }, []int{3, 77}},
		{"one", 37, func(s []int) bool { return slices.Contains(s, 36) }, []int{36}},
		{"three of many, and 50 spoils it", 200, func(s []int) bool {
			return slices.Contains(s, 10) && slices.Contains(s, 11) && slices.Contains(s, 150) && !(slices.Contains(s, 50) && len(s) >= 40 && len(s) <= 150)
		}, []int{10, 11, 150}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := make([]int, tt.n)
			for i := range all {
				all[i] = i
			}
			got := ddmin(all, tt.test)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ddmin = %v, want %v", got, tt.want)
			}
		})
	}
}

// A violation only porcupine finds depends on operations of tokens it does
// not name (here an unknown acquire proven by its extend): the seed alone
// checks valid, and shrink widens to a window around it, amid a legal
// history's noise on the same key.
func TestShrinkWidensPastTheSeed(t *testing.T) {
	r := generated(checkertest.Config{Seed: 4, Clients: 4, Keys: 1, Events: 600, TTLms: 100}, true)
	last := r.Events[len(r.Events)-1]
	var proc history.Process
	for _, e := range r.Events {
		proc = max(proc, e.Process)
	}
	at := func(ms float64) int64 { return last.Time + int64(5e9) + int64(ms*1e6) }
	add := func(p history.Process, inv history.Event, call, ret float64, typ history.Type) {
		inv.Process, inv.Client, inv.Key, inv.Type, inv.Time = p, int(p)%100, last.Key, history.Invoke, at(call)
		comp := history.Event{Process: p, Client: inv.Client, Key: inv.Key, Token: inv.Token, F: inv.F, Type: typ, Time: at(ret)}
		r.Events = append(r.Events, inv, comp)
	}
	// Noise the checker finds legal: another client's whole hold first.
	add(proc+1, history.Event{F: history.FAcquire, Token: "N", TTLMs: 1000}, -900, -899, history.OK)
	add(proc+1, history.Event{F: history.FRelease, Token: "N"}, -500, -499, history.OK)
	add(proc+2, history.Event{F: history.FAcquire, Token: "A", TTLMs: 1000}, 0, 50, history.Info)
	add(proc+3, history.Event{F: history.FExtend, Token: "A", TTLMs: 1000}, 60, 61, history.OK)
	add(proc+4, history.Event{F: history.FAcquire, Token: "B", TTLMs: 1000}, 100, 101, history.OK)
	for i := range r.Events {
		r.Events[i].Index = int64(i)
	}
	want := firstViolation(t, r, "")
	if want == nil || want.Kind != "lock-not-linearizable" {
		t.Fatalf("the history's first violation is %+v, want lock-not-linearizable", want)
	}
	res, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Verify(r, checker.Options{Marks: testMarks}); err != nil {
		t.Fatal(err)
	}
	if res.From <= res.Seed {
		t.Fatalf("ddmin started from the seed's %d units: this history no longer needs the window", res.Seed)
	}
	var tokens []string
	for _, k := range res.Kept {
		tokens = append(tokens, k.Token)
	}
	if !slices.Contains(tokens, "A") || !slices.Contains(tokens, "B") || slices.Contains(tokens, "N") {
		t.Fatalf("kept the operations of tokens %v, want A's and B's and not the legal hold N\n%s", tokens, res.Text("generated", "out"))
	}
}

// A history whose verdict is unknown (porcupine's budget ran out with no
// witness) has nothing proven to shrink: ErrUnknown, not a guess.
func TestShrinkRefusesAnUnknownVerdict(t *testing.T) {
	r := generated(checkertest.Config{Seed: 5, Clients: 8, Keys: 1, Events: 6000, TTLms: 100, PInfo: 0.2}, true)
	opts := checker.Options{Marks: testMarks, Budget: time.Nanosecond}
	whole, err := checker.Check(r.Events, r.Attempts, opts)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Valid != checker.Unknown {
		t.Fatalf("the history checks %v with a 1 ns budget; the test needs an unknown one", whole.Valid)
	}
	if _, err := Shrink(r, Options{Check: opts}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("%v, want %v", err, ErrUnknown)
	}
}

// A stuck lock is a liveness violation the end-of-run audit proves (PTTL -1
// on a node): shrink keeps that audit, a unit of its own, and the operation
// the violation names, and drops the other keys' audits.
func TestShrinkKeepsTheAuditOfAStuckLock(t *testing.T) {
	r := generated(checkertest.Config{Seed: 6, Clients: 4, Keys: 2, Events: 2000, TTLms: 100}, true)
	last := r.Events[len(r.Events)-1]
	for i, key := range []string{"lock:{job-0}", "lock:{job-1}"} {
		pttl := int64(-2)
		if i == 1 {
			pttl = -1 // the lock key has no expiry on this node
		}
		for _, node := range []string{"valkey-0", "valkey-1"} {
			r.Events = append(r.Events, history.Event{Index: int64(len(r.Events)), Time: last.Time + int64(len(r.Events)), Process: history.Nemesis,
				Type: history.Info, F: history.NAuditPTTL, Key: key, Node: node, Value: history.Int64(pttl)})
		}
	}
	res, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Kind != "stuck-lock" || res.Target.Key != "lock:{job-1}" {
		t.Fatalf("shrank %s, want the stuck lock:{job-1}", res.Target)
	}
	if err := res.Verify(r, checker.Options{Marks: testMarks}); err != nil {
		t.Fatal(err)
	}
	audits := 0
	for _, e := range res.Shrunk.Events {
		if e.F == history.NAuditPTTL {
			audits++
			if e.Key != "lock:{job-1}" || *e.Value != -1 {
				t.Fatalf("kept the audit %s %s = %d, want only a -1 of lock:{job-1}", e.Key, e.Node, *e.Value)
			}
		}
	}
	if audits != 1 {
		t.Fatalf("kept %d audits, want the one that proves it\n%s", audits, res.Text("generated", "out"))
	}
}

// A shrink from LoadPart, which holds the violation's key's events and the
// faults only, keeps what a shrink of the whole run keeps: the same
// violation, the same events, the whole run's counts before, and a result
// Verify accepts against the whole run. An unknown --key is refused with the
// run's keys.
func TestLoadPartShrinksAsTheWholeRun(t *testing.T) {
	tests := []struct {
		name string
		kind string
		cfg  checkertest.Config
	}{
		{"injected double grant, four keys", "", checkertest.Config{Seed: 3, Clients: 8, Keys: 4, Events: 6000, TTLms: 150, PInfo: 0.03, PPause: 0.02, Inject: true}},
		{"failovers, three keys", "", checkertest.Config{Seed: 2, Clients: 8, Keys: 3, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01, PPause: 0.01, Failovers: 2, FailEvery: 15e8}},
		{"lost update, two keys", "lost-update", checkertest.Config{Seed: 4, Clients: 5, Keys: 2, Events: 4000, TTLms: 100, PPause: 0.08, Unfenced: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := generated(tt.cfg, true).Write(dir); err != nil {
				t.Fatal(err)
			}
			whole, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Shrink(whole, Options{Check: checker.Options{Marks: testMarks}, Kind: tt.kind})
			if err != nil {
				t.Fatal(err)
			}
			part, err := LoadPart(dir, Options{Check: checker.Options{Marks: testMarks}, Kind: tt.kind})
			if err != nil {
				t.Fatal(err)
			}
			if len(part.Events) >= len(whole.Events) {
				t.Errorf("LoadPart held %d events of %d: not one key's", len(part.Events), len(whole.Events))
			}
			got, err := Shrink(part, Options{Check: checker.Options{Marks: testMarks}, Kind: tt.kind})
			if err != nil {
				t.Fatal(err)
			}
			if got.Target.String() != want.Target.String() || !reflect.DeepEqual(got.Target, want.Target) || got.Before != want.Before || got.After != want.After {
				t.Fatalf("from LoadPart: %s, %v -> %v; from Load: %s, %v -> %v", got.Target, got.Before, got.After, want.Target, want.Before, want.After)
			}
			for i := range want.Shrunk.Events {
				if got.Shrunk.Events[i].Index != want.Shrunk.Events[i].Index {
					t.Fatalf("kept event %d: index %d, want %d", i, got.Shrunk.Events[i].Index, want.Shrunk.Events[i].Index)
				}
			}
			if err := got.Verify(whole, checker.Options{Marks: testMarks}); err != nil {
				t.Fatal(err)
			}
			if got.origin != want.origin {
				t.Errorf("origin %d, want the whole run's %d", got.origin, want.origin)
			}
		})
	}
	t.Run("unknown key", func(t *testing.T) {
		dir := t.TempDir()
		if err := generated(tests[0].cfg, false).Write(dir); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPart(dir, Options{Check: checker.Options{Marks: testMarks}, Key: "lock:{nope}"})
		var uk *UnknownKeyError
		if !errors.As(err, &uk) || len(uk.Keys) != 4 || !strings.Contains(err.Error(), `"lock:{nope}"`) {
			t.Fatalf("LoadPart with an unknown key: %v", err)
		}
	})
}
