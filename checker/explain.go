package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// The explanations are read by workshop attendees: one or two sentences, times
// in seconds since the run began, clients by slot number, no model jargon.

func secs(t, t0 int64) string { return fmt.Sprintf("%.3f s", rel(t, t0)) }

func (ev evictions) causeClause(cause string, faults []string) string {
	if c, ok := ev.cat.LookupCause(cause); ok {
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

// evictions are the times the nemesis logged each lock key evicted
// (history.NEvicted), per key in time order, and lag, how late such a log
// may come after the eviction (attribute's slack for point events); cat is
// the catalog whose causes the explanations name.
type evictions struct {
	at  map[string][]int64
	lag int64
	cat *marks.Catalog
}

func evictionsOf(nem []history.Event, lag int64, cat *marks.Catalog) evictions {
	ev := evictions{at: make(map[string][]int64), lag: lag, cat: cat}
	for _, e := range nem {
		if e.F == history.NEvicted && e.Key != "" {
			ev.at[e.Key] = append(ev.at[e.Key], e.Time)
		}
	}
	for _, ts := range ev.at {
		slices.Sort(ts)
	}
	return ev
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
// within s: the text names it, or says that none was logged there.
func (ev evictions) clause(cause string, faults []string, s lossSpan, t0 int64) string {
	if cause != marks.CauseEviction {
		return ev.causeClause(cause, faults)
	}
	// The node logs an eviction a moment after it, so one of the first
	// lease's key comes after the first acquire was sent (the key was set by
	// then) and at most lag after the far end. Logged between the two grants
	// is the plain case; before the first grant's reply or after the far end,
	// the log's delay is named.
	var within []int64
	early, late := int64(never), int64(never)
	for _, t := range ev.at[s.key] {
		switch {
		case t >= s.grant && t <= s.at:
			within = append(within, t)
		case t >= s.call && t < s.grant:
			early = t
		case t > s.at && t <= s.at+ev.lag && late == never:
			late = t
		}
	}
	ended := fmt.Sprintf("%s at %s", s.second, secs(s.at, t0))
	var seen string
	switch {
	case len(within) > 0:
		seen = fmt.Sprintf("%s evicted at %s, between %s grant at %s and %s", s.key, secs(within[0], t0), s.first, secs(s.grant, t0), ended)
		if len(within) > 1 {
			seen += fmt.Sprintf(" (the first of %d evictions of the key logged between them)", len(within))
		}
	case early != never:
		seen = fmt.Sprintf("%s evicted at %s, after %s acquire at %s was sent and before %s", s.key, secs(early, t0), s.first, secs(s.call, t0), ended)
	case late != never:
		seen = fmt.Sprintf("%s evicted at %s, %.1f ms after %s (the node's notice comes a moment after the eviction)", s.key, secs(late, t0), float64(late-s.at)/1e6, ended)
	default:
		return fmt.Sprintf("It happened while the primary was over its maxmemory%s, but the node logged no eviction of %s between %s acquire at %s and %s: the cause named is the fault in force, not an eviction seen.",
			faultList(faults), s.key, s.first, secs(s.call, t0), ended)
	}
	return ev.causeClause(cause, faults) + " The node logged " + seen + "."
}

// names words two holders for a sentence: by client slot, and by token too
// when both are one client (a client that re-used or renewed under another
// token), so that a reader never sees "clients 0 and 0".
func names(c1 int, t1 string, c2 int, t2 string) (string, string) {
	if c1 != c2 {
		return fmt.Sprintf("client %d", c1), fmt.Sprintf("client %d", c2)
	}
	if t1 == t2 {
		return fmt.Sprintf("client %d (token %s)", c1, ShortToken(t1)), fmt.Sprintf("client %d again (same token)", c2)
	}
	return fmt.Sprintf("client %d (token %s)", c1, ShortToken(t1)), fmt.Sprintf("client %d (token %s)", c2, ShortToken(t2))
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func explainWitness(w witness, t0 int64, cause string, faults []string, ev evictions) string {
	h := w.holder
	a, b := names(h.grant.Client, h.token, w.op.Client, w.op.Token)
	s := lossSpan{key: w.key, first: a + "'s", second: b + "'s grant", call: h.grant.Call, grant: h.grant.Return, at: opMoment(w.op)}
	switch {
	case w.kind == "lease-lost":
		s.first, s.second = fmt.Sprintf("client %d's", h.grant.Client), "the reply to its "+w.op.F
	case w.op.F != history.FAcquire:
		s.second = b + "'s " + w.op.F
	}
	clause := ev.clause(cause, faults, s, t0)
	switch w.kind {
	case "non-holder-release", "non-holder-extend":
		if w.unknownGrant {
			return fmt.Sprintf("%s's %s of its own token succeeded on %s at %s while %s certainly held the lock (its lease ran from %s to at least %s). %s's acquire had ended with an unknown outcome: the server granted it the lock while %s's lease was alive, and the %s found that grant. A correct lock server never grants a lock whose lease cannot have expired. %s",
				capital(b), w.op.F, w.key, secs(w.op.Call, t0), a, secs(h.start, t0), secs(h.end, t0), capital(b), a, w.op.F, clause)
		}
	}
	switch w.kind {
	case "non-holder-release":
		return fmt.Sprintf("%s released %s at %s while %s certainly held it (its lease ran from %s to at least %s): the release freed someone else's lock. A release that checks no token does this: a plain DEL (DELIFEQ would have refused), or an unlock run on a session a connection pooler shares between clients.",
			capital(b), w.key, secs(w.op.Call, t0), a, secs(h.start, t0), secs(h.end, t0))
	case "lease-lost":
		return fmt.Sprintf("The lock service ended client %d's lease on %s early: its lease (token %s) was certainly alive from %s to %s, yet at %s the server answered its %s that the token did not hold the lock, and granted the lock to client %d again (token %s) at %s. There were never two holders, since the client had been told; but no correct lease server forgets a lease before it can have expired. %s",
			h.grant.Client, w.key, ShortToken(h.token), secs(h.start, t0), secs(h.end, t0), secs(w.op.Return, t0), w.op.F,
			w.regrant.Client, ShortToken(w.regrant.Token), secs(w.regrant.Return, t0), clause)
	case "non-holder-extend":
		return fmt.Sprintf("%s extended %s at %s while %s certainly held it (its lease ran from %s to at least %s): the extend prolonged someone else's lease. A plain PEXPIRE does this; SET ... IFEQ would have refused.",
			capital(b), w.key, secs(w.op.Call, t0), a, secs(h.start, t0), secs(h.end, t0))
	}
	if w.told != nil {
		return fmt.Sprintf("The lock service granted %s to %s at %s while %s's lease was certainly alive (from %s to %s): it had answered %s's %s at %s that the token no longer held the lock, so it ended that lease early and handed the lock on. A correct lock server never grants a lock whose lease cannot have expired. %s",
			w.key, b, secs(w.op.Return, t0), a, secs(h.start, t0), secs(h.end, t0), a, w.told.F, secs(w.told.Return, t0), clause)
	}
	return fmt.Sprintf("%s and %s held %s at the same time: %s's lease was certainly alive from %s to %s, yet the lock service also granted the lock to %s at %s. A correct lock server never grants a lock whose lease cannot have expired. %s",
		capital(a), b, w.key, a, secs(h.start, t0), secs(h.end, t0), b, secs(w.op.Return, t0), clause)
}

// explainStuckLock explains porcupine's verdict when the direct check found
// no witness: every placement of the unknown outcomes fails, starting at o.
func explainStuckLock(key string, o *Op, from, to, t0 int64) string {
	if o == nil {
		return fmt.Sprintf("No single correct lock server could have given the replies seen on %s between %s and %s, for any outcome of the operations whose outcome is unknown.",
			key, secs(from, t0), secs(to, t0))
	}
	return fmt.Sprintf("No single correct lock server could have given client %d's %s %s (token %s) on %s at %s: for every outcome of the earlier operations whose outcome is unknown, the lock was not in a state that allows that reply.",
		o.Client, o.F, o.Outcome, ShortToken(o.Token), key, secs(o.Call, t0))
}

func explainLostUpdate(key string, a, b *Section, t0 int64) string {
	an, bn := names(a.Client, a.Token, b.Client, b.Token)
	return fmt.Sprintf("%s and %s both read %d from the resource for %s (at %s and %s) and both had %d accepted, while both acted as holder at once: one increment was lost, because the resource took both writes. A fenced resource rejects the write that carries the older fence.",
		capital(an), bn, a.ReadValue, key, secs(a.Call, t0), secs(b.Call, t0), b.WriteValue)
}

func explainRewind(key string, w, cur *Section, t0 int64) string {
	read := "without a read before it"
	if w.Read != nil {
		read = fmt.Sprintf("after reading %d at %s", w.ReadValue, secs(w.Call, t0))
	}
	return fmt.Sprintf("Client %d's write of %d to %s (token %s, %s) was accepted at %s, after client %d's write of %d had already been accepted at %s: the value went back from %d to %d, so %d increment(s) were undone, and any holder after it counted on from %d again, repeating values already written. Client %d wrote from a value it had read before those increments; a fenced resource rejects such a stale write.",
		w.Client, w.WriteValue, key, ShortToken(w.Token), read, secs(w.Applied, t0), cur.Client, cur.WriteValue, secs(cur.Applied, t0),
		cur.WriteValue, w.WriteValue, cur.WriteValue-w.WriteValue, w.WriteValue, w.Client)
}

func explainStuckResource(key string, s *Section, from, to, t0 int64) string {
	out := fmt.Sprintf("The values the resource returned for %s between %s and %s cannot come from critical sections running one at a time.", key, secs(from, t0), secs(to, t0))
	if s != nil {
		out += fmt.Sprintf(" The first section that does not fit is client %d's (read %d, write %d) starting at %s.", s.Client, s.ReadValue, s.WriteValue, secs(s.Call, t0))
	}
	return out
}

func explainDoubleHolder(d DoubleHolder, t0 int64, ev evictions) string {
	var b strings.Builder
	a, n := names(d.StaleClient, d.StaleToken, d.NewClient, d.NewToken)
	clause := ev.clause(d.Cause, d.Faults, lossSpan{key: d.Key, first: a + "'s", second: n + "'s grant", call: d.staleCall, grant: d.staleGrant, at: d.Start}, t0)
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

// StalePaid: numbers from the database's sequence turned the stale holder
// away, and the newer holder (the lock's last choice) was protected.
func (d DoubleHolder) StalePaid() bool {
	return d.FenceSource == history.FenceResource && d.StaleTurnedAway != "" && d.NewTurnedAway == ""
}

func explainFence(f FenceIssue) string {
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
