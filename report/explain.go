package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// The explanations are read by workshop attendees: one or two sentences, times
// in seconds since the run began, clients by slot number, no model jargon.
// The checker hands over each finding's facts (checker.Facts); Explain
// writes them out.

// Explain writes the explanation of every violation, double holder, stuck
// lock and misinformed grant in res from the facts the checker returned;
// cat names the causes' words. The runner and shrink call it before a
// result is written or shown.
func Explain(res *checker.Result, cat *marks.Catalog) {
	x := explainer{t0: res.StartTime, cat: cat}
	for i := range res.DoubleHolderList {
		d := &res.DoubleHolderList[i]
		d.Explanation = x.doubleHolder(*d)
	}
	for i := range res.Liveness.StuckLocks {
		s := &res.Liveness.StuckLocks[i]
		s.Explanation = explainStuck(*s)
	}
	for kind, l := range map[string][]checker.OwnershipIssue{"expired-on-arrival": res.Ownership.ExpiredOnArrival, "regranted-to-holder": res.Ownership.Regranted} {
		for i := range l {
			l[i].Detail = explainOwnership(kind, l[i])
		}
	}
	for i := range res.Violations {
		v := &res.Violations[i]
		if v.Facts != nil {
			v.Explanation = x.violation(*v)
		}
	}
}

// ExplainViolation writes one violation's explanation, t0 being its
// result's StartTime: for a caller that keeps one violation of a result and
// drops the rest (shrink's last check).
func ExplainViolation(v *checker.Violation, t0 int64, cat *marks.Catalog) {
	if v.Facts != nil {
		v.Explanation = explainer{t0: t0, cat: cat}.violation(*v)
	}
}

type explainer struct {
	t0  int64
	cat *marks.Catalog
}

func (x explainer) violation(v checker.Violation) string {
	f, t0 := v.Facts, x.t0
	switch {
	case f.Double != nil:
		if f.Double.Explanation != "" {
			return f.Double.Explanation
		}
		return x.doubleHolder(*f.Double)
	case f.Fence != nil:
		return explainFence(*f.Fence)
	case f.Stuck != nil:
		return explainStuck(*f.Stuck)
	case f.Ownership != nil:
		return explainOwnership(v.Kind, *f.Ownership)
	case f.Holder != nil:
		return x.witness(v)
	}
	switch v.Kind {
	case "lock-not-linearizable":
		return explainStuckLock(v.Key, f.Op, f.From, f.To, t0)
	case "lost-update":
		return explainLostUpdate(v.Key, f.Sections[0], f.Sections[1], t0)
	case "rewind":
		return explainRewind(v.Key, f.Sections[0], f.Sections[1], t0)
	case "resource-not-linearizable":
		var s *checker.Section
		if len(f.Sections) > 0 {
			s = f.Sections[0]
		}
		return explainStuckResource(v.Key, s, f.From, f.To, t0)
	}
	return ""
}

func rel(t, t0 int64) float64 { return float64(t-t0) / 1e9 }

func secs(t, t0 int64) string { return fmt.Sprintf("%.3f s", rel(t, t0)) }

func (x explainer) causeClause(cause string, faults []string) string {
	if c, ok := x.cat.LookupCause(cause); ok {
		return fmt.Sprintf(c.Text, faultList(faults))
	}
	return "No injected fault was in force at the time, which points at the lock recipe, the server, or a client slower than its lease."
}

// faultList names up to three faults in force, in parentheses.
func faultList(faults []string) string {
	if len(faults) == 0 {
		return ""
	}
	return " (" + strings.Join(faults[:min(len(faults), 3)], ", ") + ")"
}

// lossSpan is where a violation on a lock key came about: from the first
// holder's acquire (sent at call, granted at grant) to the second grant, or
// the reply that ended the first lease (at). first names the first holder
// ("client 13's"), second the far end ("client 2's grant").
type lossSpan struct {
	key, first, second string
	call, grant, at    int64
}

// clause is causeClause checked against the history. A violation blamed on
// eviction is only said to follow an eviction the node logged for its key
// within s (the checker's Evictions): the text names it, or says that none
// was logged there.
func (x explainer) clause(cause string, faults []string, s lossSpan, seen *checker.Evictions) string {
	t0 := x.t0
	if cause != marks.CauseEviction || seen == nil {
		return x.causeClause(cause, faults)
	}
	// Logged between the two grants is the plain case; before the first
	// grant's reply or after the far end, the log's delay is named.
	within, early, late := seen.Within, seen.Early, seen.Late
	ended := fmt.Sprintf("%s at %s", s.second, secs(s.at, t0))
	var saw string
	switch {
	case len(within) > 0:
		saw = fmt.Sprintf("%s evicted at %s, between %s grant at %s and %s", s.key, secs(within[0], t0), s.first, secs(s.grant, t0), ended)
		if len(within) > 1 {
			saw += fmt.Sprintf(" (the first of %d evictions of the key logged between them)", len(within))
		}
	case early != checker.Never:
		saw = fmt.Sprintf("%s evicted at %s, after %s acquire at %s was sent and before %s", s.key, secs(early, t0), s.first, secs(s.call, t0), ended)
	case late != checker.Never:
		saw = fmt.Sprintf("%s evicted at %s, %.1f ms after %s (the node's notice comes a moment after the eviction)", s.key, secs(late, t0), float64(late-s.at)/1e6, ended)
	default:
		return fmt.Sprintf("It happened while the primary was over its maxmemory%s, but the node logged no eviction of %s between %s acquire at %s and %s: the cause named is the fault in force, not an eviction seen.",
			faultList(faults), s.key, s.first, secs(s.call, t0), ended)
	}
	return x.causeClause(cause, faults) + " The node logged " + saw + "."
}

// names words two holders for a sentence: by client slot, and by token too
// when both are one client (a client that re-used or renewed under another
// token), so that a reader never sees "clients 0 and 0".
func names(c1 int, t1 string, c2 int, t2 string) (string, string) {
	if c1 != c2 {
		return fmt.Sprintf("client %d", c1), fmt.Sprintf("client %d", c2)
	}
	if t1 == t2 {
		return fmt.Sprintf("client %d (token %s)", c1, checker.ShortToken(t1)), fmt.Sprintf("client %d again (same token)", c2)
	}
	return fmt.Sprintf("client %d (token %s)", c1, checker.ShortToken(t1)), fmt.Sprintf("client %d (token %s)", c2, checker.ShortToken(t2))
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (x explainer) witness(v checker.Violation) string {
	f, t0, cause, faults := v.Facts, x.t0, v.Cause, v.Faults
	h, op := f.Holder, f.Op
	a, b := names(h.Client, h.Token, op.Client, op.Token)
	s := lossSpan{key: v.Key, first: a + "'s", second: b + "'s grant", call: h.Call, grant: h.Grant, at: opMoment(op)}
	switch {
	case v.Kind == "lease-lost":
		s.first, s.second = fmt.Sprintf("client %d's", h.Client), "the reply to its "+op.F
	case op.F != history.FAcquire:
		s.second = b + "'s " + op.F
	}
	clause := x.clause(cause, faults, s, f.Evictions)
	switch v.Kind {
	case "non-holder-release", "non-holder-extend":
		if f.UnknownGrant {
			return fmt.Sprintf("%s's %s of its own token succeeded on %s at %s while %s certainly held the lock (its lease ran from %s to at least %s). %s's acquire had ended with an unknown outcome: the server granted it the lock while %s's lease was alive, and the %s found that grant. A correct lock server never grants a lock whose lease cannot have expired. %s",
				capital(b), op.F, v.Key, secs(op.Call, t0), a, secs(h.Start, t0), secs(h.End, t0), capital(b), a, op.F, clause)
		}
	}
	switch v.Kind {
	case "non-holder-release":
		return fmt.Sprintf("%s released %s at %s while %s certainly held it (its lease ran from %s to at least %s): the release freed someone else's lock. A release that checks no token does this: a plain DEL (DELIFEQ would have refused), or an unlock run on a session a connection pooler shares between clients.",
			capital(b), v.Key, secs(op.Call, t0), a, secs(h.Start, t0), secs(h.End, t0))
	case "lease-lost":
		return fmt.Sprintf("The lock service ended client %d's lease on %s early: its lease (token %s) was certainly alive from %s to %s, yet at %s the server answered its %s that the token did not hold the lock, and granted the lock to client %d again (token %s) at %s. There were never two holders, since the client had been told; but no correct lease server forgets a lease before it can have expired. %s",
			h.Client, v.Key, checker.ShortToken(h.Token), secs(h.Start, t0), secs(h.End, t0), secs(op.Return, t0), op.F,
			f.Regrant.Client, checker.ShortToken(f.Regrant.Token), secs(f.Regrant.Return, t0), clause)
	case "non-holder-extend":
		return fmt.Sprintf("%s extended %s at %s while %s certainly held it (its lease ran from %s to at least %s): the extend prolonged someone else's lease. A plain PEXPIRE does this; SET ... IFEQ would have refused.",
			capital(b), v.Key, secs(op.Call, t0), a, secs(h.Start, t0), secs(h.End, t0))
	}
	if f.Told != nil {
		return fmt.Sprintf("The lock service granted %s to %s at %s while %s's lease was certainly alive (from %s to %s): it had answered %s's %s at %s that the token no longer held the lock, so it ended that lease early and handed the lock on. A correct lock server never grants a lock whose lease cannot have expired. %s",
			v.Key, b, secs(op.Return, t0), a, secs(h.Start, t0), secs(h.End, t0), a, f.Told.F, secs(f.Told.Return, t0), clause)
	}
	return fmt.Sprintf("%s and %s held %s at the same time: %s's lease was certainly alive from %s to %s, yet the lock service also granted the lock to %s at %s. A correct lock server never grants a lock whose lease cannot have expired. %s",
		capital(a), b, v.Key, a, secs(h.Start, t0), secs(h.End, t0), b, secs(op.Return, t0), clause)
}

// explainStuckLock explains porcupine's verdict when the direct check found
// no witness: every placement of the unknown outcomes fails, starting at o.
func explainStuckLock(key string, o *checker.Op, from, to, t0 int64) string {
	if o == nil {
		return fmt.Sprintf("No single correct lock server could have given the replies seen on %s between %s and %s, for any outcome of the operations whose outcome is unknown.",
			key, secs(from, t0), secs(to, t0))
	}
	return fmt.Sprintf("No single correct lock server could have given client %d's %s %s (token %s) on %s at %s: for every outcome of the earlier operations whose outcome is unknown, the lock was not in a state that allows that reply.",
		o.Client, o.F, o.Outcome, checker.ShortToken(o.Token), key, secs(o.Call, t0))
}

func explainLostUpdate(key string, a, b *checker.Section, t0 int64) string {
	an, bn := names(a.Client, a.Token, b.Client, b.Token)
	return fmt.Sprintf("%s and %s both read %d from the resource for %s (at %s and %s) and both had %d accepted, while both acted as holder at once: one increment was lost, because the resource took both writes. A fenced resource rejects the write that carries the older fence.",
		capital(an), bn, a.ReadValue, key, secs(a.Call, t0), secs(b.Call, t0), b.WriteValue)
}

func explainRewind(key string, w, cur *checker.Section, t0 int64) string {
	read := "without a read before it"
	if w.Read != nil {
		read = fmt.Sprintf("after reading %d at %s", w.ReadValue, secs(w.Call, t0))
	}
	return fmt.Sprintf("Client %d's write of %d to %s (token %s, %s) was accepted at %s, after client %d's write of %d had already been accepted at %s: the value went back from %d to %d, so %d increment(s) were undone, and any holder after it counted on from %d again, repeating values already written. Client %d wrote from a value it had read before those increments; a fenced resource rejects such a stale write.",
		w.Client, w.WriteValue, key, checker.ShortToken(w.Token), read, secs(w.Applied, t0), cur.Client, cur.WriteValue, secs(cur.Applied, t0),
		cur.WriteValue, w.WriteValue, cur.WriteValue-w.WriteValue, w.WriteValue, w.Client)
}

func explainStuckResource(key string, s *checker.Section, from, to, t0 int64) string {
	out := fmt.Sprintf("The values the resource returned for %s between %s and %s cannot come from critical sections running one at a time.", key, secs(from, t0), secs(to, t0))
	if s != nil {
		out += fmt.Sprintf(" The first section that does not fit is client %d's (read %d, write %d) starting at %s.", s.Client, s.ReadValue, s.WriteValue, secs(s.Call, t0))
	}
	return out
}

func (x explainer) doubleHolder(d checker.DoubleHolder) string {
	t0 := x.t0
	var b strings.Builder
	a, n := names(d.StaleClient, d.StaleToken, d.NewClient, d.NewToken)
	var call, grant int64
	if e := d.Evictions; e != nil {
		call, grant = e.Call, e.Grant
	}
	clause := x.clause(d.Cause, d.Faults, lossSpan{key: d.Key, first: a + "'s", second: n + "'s grant", call: call, grant: grant, at: d.Start}, d.Evictions)
	if d.DoubleGrant {
		fmt.Fprintf(&b, "%s and %s both held %s for %.0f ms from %s: the lock service granted it twice. ", capital(a), n, d.Key, d.OverlapMs, secs(d.Start, t0))
		b.WriteString(clause)
	} else {
		fmt.Fprintf(&b, "%s's lease on %s expired while it still acted as holder; %s was then granted the lock, legitimately, and for %.0f ms both acted as holder. ", capital(a), d.Key, n, d.OverlapMs)
		if d.Cause == "none" {
			b.WriteString("No fault was injected on this client: it simply took longer than its lease (a stall, a slow reply).")
		} else {
			b.WriteString(clause)
		}
	}
	if d.NewTurnedAway != "" && d.FenceSource == history.FenceResource {
		// A database sequence does not go backwards: the older holder asked for
		// its number after the newer one (it stalled between grant and request).
		fmt.Fprintf(&b, " The fence turned the newer holder, client %d, away at its %s (%s), although its number came from the database's own sequence: client %d asked for its number later, after a stall between its grant and its request.", d.NewClient, d.NewTurnedAway, d.NewTurnedAwayReason, d.StaleClient)
		return b.String()
	}
	if d.StalePaid() {
		fmt.Fprintf(&b, " The fence turned the stale holder, client %d, away at its %s: the fence numbers were issued by the database's own sequence after each grant, and a sequence does not go backwards, so client %d, granted later, carried the higher number and was the holder protected. The lock still granted twice; the data is safe and the lock's last choice won.", d.StaleClient, d.StaleTurnedAway, d.NewClient)
		return b.String()
	}
	switch {
	case d.NewOutranked != "" && d.OutrankedByLater:
		fmt.Fprintf(&b, " The fence turned client %d away at its %s too (%s): its number was above client %d's, but a holder granted after it had already used the resource with a higher one; the lock was granted a third time while both still acted, and the fence sided with the newest holder.", d.NewClient, d.NewOutranked, d.NewTurnedAwayReason, d.StaleClient)
	case d.NewOutranked != "":
		fmt.Fprintf(&b, " The fence turned client %d away at its %s too (%s): its number was above client %d's, so what turned it away was a third holder's number, granted earlier and higher still.", d.NewClient, d.NewOutranked, d.NewTurnedAwayReason, d.StaleClient)
	}
	if d.NewTurnedAway != "" && d.NewSentFirst {
		fmt.Fprintf(&b, " The fence turned the newer holder, client %d, away at its %s (%s): its number was lower than client %d's, and its acquire was sent before that grant came back: either the server drew its number first and granted the lock, then lost that grant and granted it again, the replies coming back in the other order, or a failover or restart set the counter on Valkey back. The resource sided with the higher number.", d.NewClient, d.NewTurnedAway, d.NewTurnedAwayReason, d.StaleClient)
	} else if d.NewTurnedAway != "" {
		fmt.Fprintf(&b, " The fence turned the newer holder, client %d, away at its %s (%s): its fence number came from a counter on Valkey that a failover or restart set back, so the resource sided with the older holder.", d.NewClient, d.NewTurnedAway, d.NewTurnedAwayReason)
		if d.StaleWrite == "accepted" {
			fmt.Fprintf(&b, " Client %d's writes kept landing, and only one holder ever wrote: the data is safe, but the lock picked the wrong winner. A number issued by the database itself would not go backwards.", d.StaleClient)
			return b.String()
		}
	}
	switch d.StaleWrite {
	case "accepted":
		fmt.Fprintf(&b, " Client %d's stale write reached the resource and was accepted: the fence did not stop it.", d.StaleClient)
	case "rejected":
		fmt.Fprintf(&b, " Client %d's stale write was rejected by the fence: no harm done.", d.StaleClient)
	case "unknown":
		fmt.Fprintf(&b, " Client %d sent a write after the new grant; whether it landed is unknown.", d.StaleClient)
	default:
		fmt.Fprintf(&b, " Client %d did not write after the new grant.", d.StaleClient)
	}
	return b.String()
}

func explainFence(f checker.FenceIssue) string {
	if f.Kind == "duplicate" {
		return fmt.Sprintf("Fence %d on %s was handed to client %d and again to client %d: a failover lost the INCR that issued it, so a fenced resource cannot tell the two holders apart by number alone.",
			f.Fence, f.Key, f.Clients[0], f.Clients[1])
	}
	s := fmt.Sprintf("Client %d received fence %d on %s after client %d had already received %d: the fence counter went backwards (a failover or restart lost INCRs, including those of refused acquires), so a fenced resource will reject the newer holder.",
		f.Clients[1], f.Fence, f.Key, f.Clients[0], f.Previous)
	if f.GrantsBelow > 1 {
		s += fmt.Sprintf(" %d grants in a row stayed below %d before the counter caught up: every one of those holders is turned away.", f.GrantsBelow, f.Previous)
	}
	return s
}

// opMoment is when o took effect as far as a reader can tell: its reply, or
// its call when the outcome is unknown.
func opMoment(o *checker.Op) int64 {
	if o.Return == checker.Never {
		return o.Call
	}
	return o.Return
}

func explainOwnership(kind string, o checker.OwnershipIssue) string {
	if kind == "expired-on-arrival" {
		return fmt.Sprintf("client %d was granted %s with a validity of %d ms: the lease was over before the acquire returned", o.Client, o.Key, o.ValidityMs)
	}
	return fmt.Sprintf("client %d was granted %s again under the token it already held, %.0f ms before that lease could have run out, with no release between: one release no longer frees it", o.Client, o.Key, o.LeftMs)
}

func explainStuck(s checker.StuckLock) string {
	left, audited := s.Left, s.Audited
	var b strings.Builder
	fmt.Fprintf(&b, "Nobody could take %s again: ", s.Key)
	if left != nil {
		what := "granted it"
		if left.F == history.FExtend {
			what = "extended it"
		}
		if left.Outcome == history.Info {
			what = "was " + map[bool]string{true: "extending", false: "acquiring"}[left.F == history.FExtend] + " it (outcome unknown: the client never answered)"
		}
		fmt.Fprintf(&b, "client %d %s at %.3f s (event %d), and every lease should have ended by %.3f s, ",
			left.Client, what, s.LeftBy.TimeS, left.InvokeIndex, s.SinceS)
	}
	fmt.Fprintf(&b, "yet %d acquire(s) over the next %.1f s were refused with no holder renewing it", s.Attempts, s.RefusedMs/1000)
	if s.UnknownCount > 0 {
		var us []string
		for _, u := range s.Unknown {
			us = append(us, fmt.Sprintf("client %d's %s at %.3f s (event %d)", u.Client, u.F, u.TimeS, u.Event))
		}
		more := ""
		if n := s.UnknownCount - len(s.Unknown); n > 0 {
			more = fmt.Sprintf(" and %d earlier", n)
		}
		fmt.Fprintf(&b, "; earlier operations on it whose outcome is unknown, any of which may have left it taken: %s%s",
			strings.Join(us, ", "), more)
	}
	var minus []string
	for n, v := range s.Audit {
		if v == -1 {
			minus = append(minus, n)
		}
	}
	sort.Strings(minus)
	switch {
	case len(minus) > 0:
		fmt.Fprintf(&b, "; the end-of-run audit found PTTL -1 (a key with no expiry) on %s: the lock is taken forever.", strings.Join(minus, ", "))
	case !audited:
		b.WriteString(" (no end-of-run PTTL audit in this run to confirm it).")
	default:
		b.WriteString(".")
	}
	return b.String()
}
