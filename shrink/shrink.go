// Package shrink cuts a failing run down to a small sub-history that the
// checker still judges invalid with the same violation: the same kind, on
// the same lock key, blamed on the same cause. It removes whole units
// (an operation with its completion and its resource records, a fault with
// its heal) by delta debugging (Zeller and Hildebrandt, "Simplifying and
// Isolating Failure-Inducing Input") until no single unit can go.
//
// Every rule of the checker looks at one key's operations, so shrink checks
// only the violating key's (and the faults): and it starts ddmin from what
// the violation depends on (every operation of the tokens it names and the
// faults around it), widening to a window around it only when that alone
// does not show it again. The whole run is checked once, to find the
// violation; every later check is of a few hundred events at most.
// docs/checker.md, "lockjepsen shrink", tells the rules.
package shrink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/report"
)

// Options choose the violation to shrink and how to judge.
type Options struct {
	// Kind and Key pick the violation: the first of Kind on Key; either may
	// be empty. With neither, the first violation that makes the history
	// invalid.
	Kind, Key string
	// Check is how every sub-history is judged (Run.CheckOptions: what
	// `lockjepsen check` would use). Pictures are never drawn.
	Check checker.Options
}

// candidateBudget caps porcupine's budget for the sub-histories tried on
// the way: a try that runs out is taken as "does not show the violation",
// which costs a larger result, never a wrong one. Units whose removal ran
// out are tried again with the full budget before the result is declared
// 1-minimal.
const candidateBudget = time.Second

// Errors of a history with nothing to shrink; ShrinkError tells the rest.
var (
	ErrValid   = errors.New("nothing to shrink: the history is valid")
	ErrUnknown = errors.New("nothing to shrink: the history's verdict is unknown (porcupine's budget ran out with no violation found); check it with a larger -budget first")
)

func (o Options) validKind() error {
	if o.Kind != "" && !slices.Contains(checker.ViolationKinds, o.Kind) {
		return fmt.Errorf("unknown violation kind %q (one of %s)", o.Kind, strings.Join(checker.ViolationKinds, ", "))
	}
	return nil
}

// UnknownKeyError: --key names no lock key of the run; Keys are its keys.
type UnknownKeyError struct {
	Key, History string
	Keys         []string
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("--key %q is not in %s; its lock keys are %s", e.Key, e.History, strings.Join(e.Keys, ", "))
}

// NotFoundError: the run has violations, but none of the kind on the key
// asked for. Have lists the kinds on each key the run does have.
type NotFoundError struct {
	Kind, Key string
	Have      []string // "double-grant on lock:{job-1} (89)", ...
}

func (e *NotFoundError) Error() string {
	want := "a violation"
	if e.Kind != "" {
		want = "a " + e.Kind
	}
	if e.Key != "" {
		want += " on " + e.Key
	}
	return fmt.Sprintf("the history has no %s; it has %s: pick one of those with --kind and --key", want, strings.Join(e.Have, ", "))
}

// Target is the violation a sub-history must still show.
type Target struct {
	Kind, Key string
	// Cause is what the checker blamed it on (a fault's cause, or none): a
	// sub-history that drops the fault it happened around shows a different
	// story, so it does not count.
	Cause string
	// Events (the invokes the violation names, by history index) or, for
	// a finding that names none, Tokens: the same violation, not another of
	// its kind. Without them a porcupine finding shrinks to a lone extend
	// whose unknown acquire was removed, which the run never showed.
	Events []int64
	Tokens []string
	// Reported: a finding that changes no verdict (a stale write accepted
	// before the newer holder's first fenced access, say), picked in a
	// valid run. A sweep cell is red for such findings too, and its
	// evidence is their shrunk run: a valid sub-history that still shows
	// it. One that turns invalid tells another story (dropping the event
	// that ended the holder's session makes its stale write a double
	// grant), so it does not count.
	Reported bool
}

// targetOf is the violation v as a target.
func targetOf(v *checker.Violation) Target {
	return Target{Kind: v.Kind, Key: v.Key, Cause: v.Cause, Events: v.Events, Tokens: v.Tokens}
}

// same reports whether v is the target's violation: its kind on its key
// with its cause, naming the same operations.
func (t Target) same(v *checker.Violation) bool {
	if v.Kind != t.Kind || v.Key != t.Key || v.Cause != t.Cause {
		return false
	}
	if len(t.Events) > 0 {
		return sameSet(v.Events, t.Events)
	}
	return sameSet(v.Tokens, t.Tokens)
}

func sameSet[T comparable](a, b []T) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

func (t Target) String() string { return fmt.Sprintf("%s on %s (cause: %s)", t.Kind, t.Key, t.Cause) }

// Counts are the size of a run.
type Counts struct {
	Events     int `json:"events"`
	Operations int `json:"operations"` // client operations (invokes)
	Nemesis    int `json:"nemesis_events"`
	Attempts   int `json:"resource_attempts"`
}

// CountOf counts a run.
func CountOf(r *Run) Counts {
	c := Counts{Attempts: len(r.Attempts)}
	for i := range r.Events {
		countEvent(&c, &r.Events[i])
	}
	return c
}

func countEvent(c *Counts, e *history.Event) {
	c.Events++
	switch {
	case !e.IsClient():
		c.Nemesis++
	case e.Type == history.Invoke:
		c.Operations++
	}
}

// Kept is one unit of the result and why it stayed: what the checker says
// of the result without it.
type Kept struct {
	Unit
	Events  []history.Event // the unit's events (invoke and completion, fault and heal)
	Without string          // e.g. "valid", "double-grant blamed on none"
}

// Result is a shrunk run and how it was found.
type Result struct {
	Target    Target
	Original  checker.Violation // the violation picked in the whole run
	Violation checker.Violation // the same violation in the shrunk run
	Shrunk    *Run
	Kept      []Kept
	Before    Counts
	After     Counts
	// Seed is how many units the violation named (its tokens' operations,
	// the faults around it); From how many ddmin started from (the seed, or
	// a window around it when the seed alone did not show the violation);
	// Units how many the key (or the run) had.
	Seed, From, Units int
	KeyOnly           bool          // the key's own units sufficed (the usual case)
	Checks            int           // sub-histories checked
	Read              time.Duration // reading the run folder (Load)
	Elapsed           time.Duration // the check of the whole run and the shrink
	origin            int64         // the whole run's first event
}

// Shrink finds a 1-minimal sub-history of r that the checker judges invalid
// with the violation o picks: without any one of its units the history is
// valid or no longer shows that violation (its kind on its key, its cause,
// the operations it names).
func Shrink(r *Run, o Options) (*Result, error) {
	began := time.Now()
	if err := o.validKind(); err != nil {
		return nil, err
	}
	opts := o.Check.Defaults()
	opts.Pictures = false
	whole := (*checker.Result)(nil)
	if r.part != nil {
		whole = r.part.whole
	} else {
		var err error
		if whole, err = checker.Check(r.Events, r.Attempts, opts); err != nil {
			return nil, fmt.Errorf("check the whole run: %w", err)
		}
		report.Explain(whole, opts.Marks)
	}
	v, err := pick(whole, o.Kind, o.Key)
	if err != nil {
		return nil, err
	}
	t := targetOf(v)
	t.Reported = whole.Valid == checker.Valid
	s := &shrinker{run: r, target: t, full: opts, cache: map[string]*outcome{}}
	s.try = opts
	s.try.Budget = min(opts.Budget, candidateBudget)
	s.units, s.keyOnly = buildUnits(r, v.Key, opts.Marks), true
	from := s.grow(v)
	if from == nil {
		// A token shared with another key ties the keys' checks together:
		// judge the whole run's units, which a Run of one key lacks.
		if r.part != nil {
			full, err := Load(r.part.dir)
			if err != nil {
				return nil, err
			}
			return Shrink(full, o)
		}
		s.units, s.keyOnly, s.cache = buildUnits(r, "", opts.Marks), false, map[string]*outcome{}
		if from = s.grow(v); from == nil {
			return nil, fmt.Errorf("the %s does not show again on a check of its own operations; this is a checker bug worth reporting", s.target)
		}
	}
	kept := ddmin(from, s.holds)
	s.final = true
	kept = oneMinimal(kept, s.holds)

	res := &Result{Target: s.target, Original: *v, Before: CountOf(r), Seed: len(s.seed(v)), From: len(from),
		Units: len(s.units), KeyOnly: s.keyOnly, Read: r.read, origin: r.Events[0].Time}
	if r.part != nil {
		res.Before, res.origin = r.part.counts, r.part.origin
	}
	last := s.check(kept, true)
	if !last.ok {
		return nil, fmt.Errorf("the shrunk history no longer shows the %s (%s); this is a bug worth reporting", s.target, last.text)
	}
	res.Violation = *last.v
	// Explained here, not in every check: only the kept violation is shown.
	report.ExplainViolation(&res.Violation, last.start, s.full.Marks)
	res.Shrunk = materialize(r, s.units, kept)
	res.After = CountOf(res.Shrunk)
	for j, i := range kept {
		rest := slices.Delete(slices.Clone(kept), j, j+1)
		k := Kept{Unit: s.units[i], Without: s.check(rest, false).text}
		for _, e := range k.events {
			if e >= 0 {
				k.Events = append(k.Events, r.Events[e])
			}
		}
		res.Kept = append(res.Kept, k)
	}
	res.Checks = s.checks
	res.Elapsed = time.Since(began)
	return res, nil
}

// pick chooses the violation: the first of kind on key (either may be
// empty: any), and with no kind asked for, the first that falsifies a
// verdict (the reported-only findings come with one). A valid run has
// only reported findings, which a kind must name.
func pick(res *checker.Result, kind, key string) (*checker.Violation, error) {
	switch {
	case res.Valid == checker.Valid && kind == "":
		return nil, ErrValid
	case res.Valid == checker.Valid:
		for i := range res.Violations {
			if v := &res.Violations[i]; v.Kind == kind && v.Affects == "none" && (key == "" || v.Key == key) {
				return v, nil
			}
		}
		return nil, ErrValid
	case res.Valid == checker.Unknown:
		return nil, ErrUnknown
	}
	for i := range res.Violations {
		v := &res.Violations[i]
		if (kind == "" && v.Affects != "none" || v.Kind == kind) && (key == "" || v.Key == key) {
			return v, nil
		}
	}
	count := map[string]int{}
	var have []string
	for _, v := range res.Violations {
		k := v.Kind + " on " + v.Key
		if count[k] == 0 {
			have = append(have, k)
		}
		count[k]++
	}
	for i, k := range have {
		have[i] = fmt.Sprintf("%s (%d)", k, count[k])
	}
	return nil, &NotFoundError{Kind: kind, Key: key, Have: have}
}

// shrinker holds the units of one shrink and the checker's answers so far.
type shrinker struct {
	run        *Run
	target     Target
	units      []Unit
	keyOnly    bool
	full, try  checker.Options // the run's options, and the ones candidates are tried with
	final      bool            // the last pass: retry with the full budget what ran out
	cache      map[string]*outcome
	checks     int
	scratchKey []byte
}

// outcome is the checker's answer on one sub-history.
type outcome struct {
	ok       bool
	v        *checker.Violation
	text     string // what it showed instead, when not ok
	budgeted bool   // judged with the capped budget, and porcupine ran out
	fullDone bool
	start    int64 // the check's StartTime, which v's explanation counts from
}

// holds is ddmin's test: the sub-history still shows the target.
func (s *shrinker) holds(set []int) bool { return s.check(set, false).ok }

// check judges the units in set (sorted), once per set: with the capped
// budget while searching, and again with the full one, in the final pass,
// when the capped one ran out.
func (s *shrinker) check(set []int, full bool) *outcome {
	key := s.cacheKey(set)
	o, seen := s.cache[key]
	if seen && !(o.budgeted && (full || s.final) && !o.fullDone) {
		return o
	}
	opts := s.try
	if seen || full || s.final {
		opts = s.full
	}
	sub := materialize(s.run, s.units, set)
	s.checks++
	res, err := checker.Check(sub.Events, sub.Attempts, opts)
	n := &outcome{fullDone: opts.Budget == s.full.Budget}
	if err != nil {
		n.text = "not a history: " + err.Error() // cannot be: whole units keep every rule
	} else {
		n.ok, n.v, n.text = s.target.judge(res)
		n.start = res.StartTime
		n.budgeted = !n.ok && (res.Valid == checker.Unknown || unknownOn(res, s.target.Key))
	}
	s.cache[key] = n
	return n
}

// unknownOn reports whether porcupine ran out on the key.
func unknownOn(res *checker.Result, key string) bool {
	for _, ks := range []map[string]*checker.KeyResult{res.Lock.Keys, res.Resource.Keys} {
		if k := ks[key]; k != nil && k.Valid == checker.Unknown {
			return true
		}
	}
	return false
}

func (s *shrinker) cacheKey(set []int) string {
	b := s.scratchKey[:0]
	for _, i := range set {
		b = binary.AppendUvarint(b, uint64(i))
	}
	s.scratchKey = b
	return string(b)
}

// judge says whether a result shows the target, and what it shows instead.
func (t Target) judge(res *checker.Result) (bool, *checker.Violation, string) {
	switch {
	case res.Valid == checker.Valid && !t.Reported:
		return false, nil, "valid"
	case res.Valid == checker.Invalid && t.Reported:
		return false, nil, "invalid (the valid run's finding became a violation)"
	case res.Valid == checker.Unknown:
		return false, nil, "unknown (porcupine's budget ran out)"
	}
	var other []string
	cause, another := "", false
	for i := range res.Violations {
		v := &res.Violations[i]
		switch {
		case v.Key != t.Key:
		case t.same(v):
			return true, v, ""
		case v.Kind == t.Kind && v.Cause != t.Cause:
			cause = v.Cause
		case v.Kind == t.Kind:
			another = true
		case !slices.Contains(other, v.Kind):
			other = append(other, v.Kind)
		}
	}
	switch {
	case cause != "":
		return false, nil, t.Kind + " blamed on " + cause
	case another:
		return false, nil, "a " + t.Kind + " of other operations"
	case len(other) > 0:
		return false, nil, strings.Join(other, ", ") + " only"
	}
	return false, nil, "invalid, but nothing on " + t.Key
}

// seed is what the violation names: every operation of its tokens (their
// grants, extends, releases, reads and writes with the resource's records
// of them) and of the invokes it names, and the faults in force from the
// first of those to the violation's end, widened backwards by the longest
// lease among them (a fault that let the first grant go unreplicated began
// before it). A fault that began after the violation's end cannot be its
// cause (docs/checker.md, Cause).
func (s *shrinker) seed(v *checker.Violation) []int {
	var out []int
	lo, hi := v.Start, s.clip(v.End)
	var pad int64
	for i := range s.units {
		u := &s.units[i]
		if u.Fault {
			continue
		}
		if slices.Contains(v.Tokens, u.Token) || slices.Contains(v.Events, s.run.Events[u.events[0]].Index) {
			out = append(out, i)
			lo, pad = min(lo, u.Start), max(pad, u.ttl)
		}
	}
	for i := range s.units {
		if u := &s.units[i]; u.Fault && u.Start <= hi && u.end() >= lo-pad {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// clip bounds a violation's end, which may be "never" (a write whose
// fate is unknown), by the history's last event.
func (s *shrinker) clip(t int64) int64 { return min(t, s.run.Events[len(s.run.Events)-1].Time) }

// grow is where ddmin starts: the seed when it shows the target, else the
// seed and every unit that overlaps a window around it, the window's margin
// doubling from the longest lease (or a second) until it holds every unit.
// nil when not even every unit shows the target.
func (s *shrinker) grow(v *checker.Violation) []int {
	seed := s.seed(v)
	if len(seed) > 0 && s.holds(seed) {
		return seed
	}
	lo, hi, pad := v.Start, s.clip(v.End), int64(time.Second)
	for _, i := range seed {
		u := &s.units[i]
		lo, hi, pad = min(lo, u.Start), max(hi, s.clip(u.end())), max(pad, u.ttl)
	}
	for {
		var set []int
		for i := range s.units {
			_, seeded := slices.BinarySearch(seed, i)
			if u := &s.units[i]; u.Start <= hi+pad && u.end() >= lo-pad || seeded {
				set = append(set, i)
			}
		}
		if s.holds(set) {
			return set
		}
		if len(set) == len(s.units) {
			return nil
		}
		pad *= 2
	}
}

// Verify re-judges a result against the run it came from, without trusting
// how it was found: (a) the checker judges the shrunk run invalid with the
// target's kind on its key and cause; (b) it is a sub-history of r, every
// event and attempt one of r's in r's order, with no operation split from
// its completion and no fault from its heal; (c) it is 1-minimal: without
// any one kept unit (which together hold every event and attempt once) the
// violation is gone or changed. Tests and the end-to-end run call it.
func (res *Result) Verify(r *Run, opts checker.Options) error {
	opts = opts.Defaults()
	opts.Pictures = false
	sh := res.Shrunk
	c, err := checker.Check(sh.Events, sh.Attempts, opts)
	if err != nil {
		return fmt.Errorf("(a) the shrunk run does not check: %w", err)
	}
	if ok, _, text := res.Target.judge(c); !ok {
		return fmt.Errorf("(a) the shrunk run does not show the %s: %s", res.Target, text)
	}
	if err := subHistory(r, sh, opts.Marks); err != nil {
		return fmt.Errorf("(b) %w", err)
	}
	seen, attempts := map[int64]int{}, 0
	for _, k := range res.Kept {
		for _, e := range k.Events {
			seen[e.Index]++
		}
		attempts += len(k.attempts)
	}
	for _, e := range sh.Events {
		if seen[e.Index] != 1 {
			return fmt.Errorf("(c) event %d is in %d kept units, want 1", e.Index, seen[e.Index])
		}
	}
	if len(seen) != len(sh.Events) || attempts != len(sh.Attempts) {
		return fmt.Errorf("(c) the kept units hold %d events and %d attempts, the shrunk run %d and %d", len(seen), attempts, len(sh.Events), len(sh.Attempts))
	}
	for i, k := range res.Kept {
		drop := map[int64]bool{}
		for _, e := range k.Events {
			drop[e.Index] = true
		}
		var evs []history.Event
		for _, e := range sh.Events {
			if !drop[e.Index] {
				evs = append(evs, e)
			}
		}
		var ats []history.Attempt
		for _, a := range sh.Attempts {
			if !slices.ContainsFunc(k.attempts, func(j int) bool { return r.Attempts[j] == a }) {
				ats = append(ats, a)
			}
		}
		c, err := checker.Check(evs, ats, opts)
		if err != nil {
			return fmt.Errorf("(c) without kept unit %d: %w", i, err)
		}
		if ok, _, _ := res.Target.judge(c); ok {
			return fmt.Errorf("(c) not 1-minimal: without its %s %s at %d the run still shows the %s", k.what(), k.F, k.Start, res.Target)
		}
	}
	return nil
}

// subHistory checks that sh's events and attempts are r's, in r's order,
// and that every operation and every fault of r is in sh whole or not at
// all.
func subHistory(r, sh *Run, cat *marks.Catalog) error {
	pos := make(map[int64]int, len(r.Events))
	for i := range r.Events {
		pos[r.Events[i].Index] = i
	}
	kept := make(map[int]bool, len(sh.Events))
	last := -1
	for _, e := range sh.Events {
		i, ok := pos[e.Index]
		if !ok || !sameEvent(&r.Events[i], &e) {
			return fmt.Errorf("event %d is not the run's", e.Index)
		}
		if i <= last {
			return fmt.Errorf("event %d is out of the run's order", e.Index)
		}
		kept[i], last = true, i
	}
	j := 0
	for _, a := range sh.Attempts {
		for j < len(r.Attempts) && r.Attempts[j] != a {
			j++
		}
		if j == len(r.Attempts) {
			return fmt.Errorf("resource attempt %+v is not the run's, or out of its order", a)
		}
		j++
	}
	for _, u := range buildUnits(r, "", cat) {
		if u.events[1] >= 0 && kept[u.events[0]] != kept[u.events[1]] {
			return fmt.Errorf("events %d and %d (%s) are one unit, but only one was kept", r.Events[u.events[0]].Index, r.Events[u.events[1]].Index, u.F)
		}
	}
	return nil
}

// sameEvent compares two events field by field, Value by what it points at.
func sameEvent(a, b *history.Event) bool {
	x, y := *a, *b
	if (x.Value == nil) != (y.Value == nil) || x.Value != nil && *x.Value != *y.Value {
		return false
	}
	x.Value, y.Value = nil, nil
	return x == y
}
