package scenario

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
)

// Predicate is one claim about a checked run, composable as Jepsen's
// checker/compose composes checkers: Check reads the verdict and says what it
// saw, so a claim that fails tells the reader what the run showed instead.
// Scenarios build their expectations from these, and the workshop its claims.
type Predicate struct {
	Text  string
	Check func(r *checker.Result) (saw string, ok bool)
}

// Knobs are the settings that change what a scenario predicts.
type Knobs struct {
	Recipe string
	Fenced bool
	// FenceSource is valkey or resource (--fence-source); empty means valkey.
	FenceSource string
	// Persistent: a restarted node keeps its locks (AOF with appendfsync
	// always) or stays down longer than the TTL (--delayed-restart).
	Persistent bool
	// LeavesNoTTL and Unchecked are the recipe's kept flaws (its catalog
	// entry's): it can leave a key with no TTL, or it extends and releases
	// without comparing the token.
	LeavesNoTTL, Unchecked bool
}

// Expectation is what a scenario's lesson predicts for a run with the given
// knobs: every predicate must hold.
type Expectation func(k Knobs) []Predicate

// Holds reports whether every predicate holds, and what each saw.
func Holds(ps []Predicate, r *checker.Result) (bool, []string) {
	ok := true
	var saw []string
	for _, p := range ps {
		s, good := p.Check(r)
		ok = ok && good
		saw = append(saw, fmt.Sprintf("%s: %s", p.Text, s))
	}
	return ok, saw
}

// LockIs: the lock check's verdict.
func LockIs(want checker.Validity) Predicate {
	return Predicate{Text: "lock " + want.String(), Check: func(r *checker.Result) (string, bool) {
		return "lock.valid = " + r.Lock.Valid.String(), r.Lock.Valid == want
	}}
}

// ResourceIs: the resource check's verdict.
func ResourceIs(want checker.Validity) Predicate {
	return Predicate{Text: "resource " + want.String(), Check: func(r *checker.Result) (string, bool) {
		return fmt.Sprintf("resource.valid = %s, lost_updates = %d", r.Resource.Valid, r.Resource.LostUpdates), r.Resource.Valid == want
	}}
}

// ValidIs: the overall verdict.
func ValidIs(want checker.Validity) Predicate {
	return Predicate{Text: "valid " + want.String(), Check: func(r *checker.Result) (string, bool) {
		return "valid = " + r.Valid.String(), r.Valid == want
	}}
}

// Decided: a verdict was reached (not unknown), whatever it is.
func Decided() Predicate {
	return Predicate{Text: "a verdict", Check: func(r *checker.Result) (string, bool) {
		return "valid = " + r.Valid.String(), r.Valid != checker.Unknown
	}}
}

// DoubleGrantBy: a double grant blamed on cause.
func DoubleGrantBy(cause string) Predicate {
	return Predicate{Text: "a double grant caused by " + cause, Check: func(r *checker.Result) (string, bool) {
		causes := map[string]int{}
		for _, v := range r.Violations {
			if v.Kind == "double-grant" {
				causes[v.Cause]++
			}
		}
		saw := fmt.Sprintf("double-grant violations by cause: %v", causes)
		if causes[cause] == 0 {
			saw += blamedElsewhere(r, func(v checker.Violation) bool { return v.Kind == "double-grant" })
		}
		return saw, causes[cause] > 0
	}}
}

// blamedElsewhere says, for a cause predicate that failed, when the first
// few matching violations happened and what they were blamed on, with the
// faults in force: so that a flake shows whether the lesson happened but
// fell outside the fault's window (a window opened late) or did not happen.
func blamedElsewhere(r *checker.Result, match func(checker.Violation) bool) string {
	var b strings.Builder
	n := 0
	for _, v := range r.Violations {
		if !match(v) {
			continue
		}
		if n++; n > 3 {
			b.WriteString("; ...")
			break
		}
		fmt.Fprintf(&b, "; %s at %.3f s blamed on %s (faults in force: %s)", v.Kind, v.StartS, v.Cause, strings.Join(v.Faults, ", "))
	}
	return b.String()
}

// LockViolationBy accepts any violation against the lock with that cause: a
// restart that empties the primary shows as a double grant when two leases
// were certainly alive at once, or as lock-not-linearizable when unknown
// outcomes leave only an ordering no correct server could produce.
func LockViolationBy(cause string) Predicate {
	return Predicate{Text: "a lock violation caused by " + cause, Check: func(r *checker.Result) (string, bool) {
		kinds := map[string]int{}
		for _, v := range r.Violations {
			if v.Affects == "lock" && v.Cause == cause {
				kinds[v.Kind]++
			}
		}
		saw := fmt.Sprintf("lock violations caused by %s: %v", cause, kinds)
		if len(kinds) == 0 {
			saw += blamedElsewhere(r, func(v checker.Violation) bool { return v.Affects == "lock" })
		}
		return saw, len(kinds) > 0
	}}
}

// NewerTurnedAway: the fence refused the newer of two holders (its number was
// set back by a failover).
func NewerTurnedAway() Predicate {
	return Predicate{Text: "the newer holder turned away", Check: func(r *checker.Result) (string, bool) {
		n := 0
		for _, d := range r.DoubleHolderList {
			if d.NewTurnedAway != "" {
				n++
			}
		}
		return fmt.Sprintf("%d of %d double holders had the newer holder turned away", n, r.DoubleHolders), n > 0
	}}
}

// StaleHolderTurnedAway: the fence refused the stale holder of a double
// holding after the newer holder's grant (numbers from the database's own
// sequence). It does not ask that the newer holder never be turned away: a
// database number orders the requests for numbers, not the grants, so an
// older holder that stalls between its grant and its request (seen under
// load in the full test suite) gets the higher number; what the database
// rules out is the demo's cause, a number set back (NoFenceRegression).
func StaleHolderTurnedAway() Predicate {
	return Predicate{Text: "the stale holder turned away", Check: func(r *checker.Result) (string, bool) {
		stale, newer := 0, 0
		for _, d := range r.DoubleHolderList {
			if d.StaleTurnedAway != "" {
				stale++
			}
			if d.NewTurnedAway != "" {
				newer++
			}
		}
		return fmt.Sprintf("%d of %d double holders had the stale holder turned away, %d the newer", stale, r.DoubleHolders, newer), stale > 0
	}}
}

// NoFenceRegression: no fence number was handed out twice or below one
// already handed out.
func NoFenceRegression() Predicate {
	return Predicate{Text: "no fence regression", Check: func(r *checker.Result) (string, bool) {
		f := r.FenceTokens
		return fmt.Sprintf("fence tokens: %d duplicates, %d regressions", f.Duplicates, f.Regressions), f.Duplicates == 0 && f.Regressions == 0
	}}
}

// NoDoubleGrant: no double-grant violation at all.
func NoDoubleGrant() Predicate {
	return Predicate{Text: "no double grant", Check: func(r *checker.Result) (string, bool) {
		n := 0
		for _, v := range r.Violations {
			if v.Kind == "double-grant" {
				n++
			}
		}
		return fmt.Sprintf("%d double-grant violations, %d double holders", n, r.DoubleHolders), n == 0
	}}
}

// Unavailable: some acquires ended with an unknown outcome (the lock service
// did not answer: it was down), which is the price of a lock without a
// failover story.
func Unavailable() Predicate {
	return Predicate{Text: "acquires unanswered while the lock service was down", Check: func(r *checker.Result) (string, bool) {
		c := r.Ops["acquire"]
		if c == nil {
			return "no acquires", false
		}
		return fmt.Sprintf("acquire: %d ok / %d fail / %d info", c.OK, c.Fail, c.Info), c.Info > 0
	}}
}

// GrantsDuring: the lock service kept granting while the fault was in
// force: every interval the fault's event began (one per node it cut off)
// saw at least one acquire return ok, and there was at least one.
func GrantsDuring(event string) Predicate {
	return Predicate{Text: "grants during every " + event, Check: func(r *checker.Result) (string, bool) {
		var grants []int
		for _, w := range r.FaultWindows {
			if w.Fault == event {
				grants = append(grants, w.Grants)
			}
		}
		ok := len(grants) > 0
		for _, g := range grants {
			ok = ok && g > 0
		}
		return fmt.Sprintf("grants in each %s window: %v", event, grants), ok
	}}
}

// SomeoneTurnedAway: the fence refused one holder of a double holding, the
// stale one or the newer one.
func SomeoneTurnedAway() Predicate {
	return Predicate{Text: "a holder turned away by the fence", Check: func(r *checker.Result) (string, bool) {
		n := 0
		for _, d := range r.DoubleHolderList {
			if d.NewTurnedAway != "" {
				n++
			}
		}
		s := r.StaleWrites
		return fmt.Sprintf("%d stale writes rejected, %d newer holders turned away", s.Rejected, n), s.Rejected > 0 || n > 0
	}}
}

// StaleWrites: the stale writes' fate, by the rule given.
func StaleWrites(text string, rule func(s checker.StaleWrites) bool) Predicate {
	return Predicate{Text: text, Check: func(r *checker.Result) (string, bool) {
		s := r.StaleWrites
		return fmt.Sprintf("stale_writes: %d attempted, %d rejected, %d accepted", s.Attempted, s.Rejected, s.Accepted), rule(s)
	}}
}

// StaleRejected: stale writes came and the fence rejected every one.
func StaleRejected() Predicate {
	return StaleWrites("stale writes rejected", func(s checker.StaleWrites) bool { return s.Rejected > 0 && s.Accepted == 0 })
}

// NoStaleAccepted: no stale write landed.
func NoStaleAccepted() Predicate {
	return StaleWrites("no stale write accepted", func(s checker.StaleWrites) bool { return s.Accepted == 0 })
}

// StaleAccepted: a stale write landed.
func StaleAccepted() Predicate {
	return StaleWrites("a stale write accepted", func(s checker.StaleWrites) bool { return s.Accepted > 0 })
}

// FirstViolationS is the time of the first violation that falsifies a
// verdict, in seconds since the first event; -1 when there is none.
func FirstViolationS(r *checker.Result) float64 {
	for _, v := range r.Violations {
		if v.Affects != "none" {
			return v.StartS
		}
	}
	return -1
}

// Expected returns the predicates of a scenario for a run with these knobs.
func (s Scenario) Expected(k Knobs) []Predicate {
	if s.expect == nil {
		return []Predicate{Decided()}
	}
	return s.expect(k)
}

// Always is an expectation that the knobs do not change.
func Always(ps ...Predicate) Expectation { return func(Knobs) []Predicate { return ps } }

// ClientSide is the expectation of a fault that only makes a client outlive
// its lease: the lock stays valid (its lease expired honestly), and only a
// fence keeps the data whole. The unsafe recipe's bare PEXPIRE/DEL act on a
// lock that is no longer theirs, which the lock check sees.
func ClientSide(k Knobs) []Predicate {
	switch {
	case k.Unchecked:
		return []Predicate{LockIs(checker.Invalid)}
	case k.Fenced:
		return []Predicate{LockIs(checker.Valid), ResourceIs(checker.Valid), SomeoneTurnedAway()}
	}
	return []Predicate{LockIs(checker.Valid), ResourceIs(checker.Invalid)}
}

// UnknownCommandFails: the server refused command as unknown for op (the
// sign of a node on an older version serving the recipe).
func UnknownCommandFails(command, op string) Predicate {
	return Predicate{Text: op + " refused as unknown command " + command, Check: func(r *checker.Result) (string, bool) {
		for _, u := range r.UnknownCommands {
			if u.Command == command {
				return fmt.Sprintf("%s unknown for %v", command, u.Ops), u.Ops[op] > 0
			}
		}
		return "no unknown " + command, false
	}}
}

// LockValidOrBlamedOn: the lock check is valid, or every violation against
// the lock is blamed on cause. For lessons whose point is elsewhere but
// where a forced switch could lose a grant (standalone's FAILOVER ...
// FORCE): a violation there is real, and must be explained, never blamed on
// nothing.
func LockValidOrBlamedOn(cause string) Predicate {
	return Predicate{Text: "lock valid, or every lock violation blamed on " + cause, Check: func(r *checker.Result) (string, bool) {
		other := map[string]int{}
		for _, v := range r.Violations {
			if v.Affects == "lock" && v.Cause != cause {
				other[v.Cause]++
			}
		}
		return fmt.Sprintf("lock.valid = %s, lock violations with another cause: %v", r.Lock.Valid, other),
			r.Lock.Valid == checker.Valid || (r.Lock.Valid == checker.Invalid && len(other) == 0)
	}}
}

// GrantLostInFailover is the failover race's prediction where the fence
// counter lives on the lock's own nodes (Valkey Cluster, a standalone
// primary promoted by hand): a double grant blamed on the failover; fenced
// from Valkey, the resource stays valid and someone is turned away (which of
// the two depends on the counter the promotion set back).
func GrantLostInFailover(k Knobs) []Predicate {
	ps := []Predicate{LockIs(checker.Invalid), DoubleGrantBy("failover")}
	if k.Fenced && k.FenceSource != "resource" {
		return append(ps, ResourceIs(checker.Valid), SomeoneTurnedAway())
	}
	return ps
}

// SomeUnknown: some operation ended info (it may have taken effect; its
// client was not told), as a network fault that loses replies makes them.
func SomeUnknown() Predicate {
	return Predicate{Text: "operations ended info", Check: func(r *checker.Result) (string, bool) {
		var parts []string
		n := 0
		for op, c := range r.Ops {
			if c.Info > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", op, c.Info))
				n += c.Info
			}
		}
		sort.Strings(parts)
		return fmt.Sprintf("info outcomes: %d (%s)", n, strings.Join(parts, ", ")), n > 0
	}}
}

// OpEndedInfo: some op of kind f ended info (it may have taken effect; its
// client was not told), as a fault on that op's replies makes it.
func OpEndedInfo(f string) Predicate {
	return Predicate{Text: f + "s ended info", Check: func(r *checker.Result) (string, bool) {
		c := r.Ops[f]
		if c == nil {
			return "no " + f + " at all", false
		}
		return fmt.Sprintf("%s: %d ok, %d failed, %d info", f, c.OK, c.Fail, c.Info), c.Info > 0
	}}
}

// Exercised: at least one of fault's windows reached its dangerous moment,
// so a valid verdict says something about it.
func Exercised(fault string) Predicate {
	return Predicate{Text: fault + " exercised", Check: func(r *checker.Result) (string, bool) {
		c, saw := coverageOf(r, fault)
		return saw, c != nil && c.Reached > 0
	}}
}

// coverageOf is fault's coverage in r, and what a predicate on it saw.
func coverageOf(r *checker.Result, fault string) (*checker.FaultCoverage, string) {
	for i, c := range r.Coverage {
		if c.Fault == fault {
			return &r.Coverage[i], fmt.Sprintf("%s: %d of %d windows reached the moment", fault, c.Reached, c.Windows)
		}
	}
	return nil, "no " + fault + " window at all"
}

// NotExercised: the run's coverage names fault among those none of whose
// windows reached their dangerous moment (a valid verdict that says
// nothing about it).
func NotExercised(fault string) Predicate {
	return Predicate{Text: fault + " not exercised", Check: func(r *checker.Result) (string, bool) {
		c, saw := coverageOf(r, fault)
		return saw, c != nil && c.Windows > 0 && c.Reached == 0 && r.NotExercised != ""
	}}
}

// PausedPastLease is the expectation of a holder paused past the lease a
// consensus service keeps for it (a lease, a session): the
// service ends it honestly, and only the fence keeps the stale write out.
func PausedPastLease(k Knobs) []Predicate {
	if !k.Fenced {
		return []Predicate{LockIs(checker.Valid), ResourceIs(checker.Invalid)}
	}
	return []Predicate{LockIs(checker.Valid), ResourceIs(checker.Valid), StaleRejected(), NoFenceRegression()}
}
