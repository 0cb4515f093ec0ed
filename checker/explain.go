package checker

import (
	"fmt"
	"strings"

	"github.com/lockjepsen/lockjepsen/nemesis"
)

// The explanations are read by workshop attendees: one or two sentences, times
// in seconds since the run began, clients by slot number, no model jargon.

func secs(t, t0 int64) string { return fmt.Sprintf("%.3f s", rel(t, t0)) }

func causeClause(cause string, faults []string) string {
	where := ""
	if len(faults) > 0 {
		where = " (" + strings.Join(faults[:min(len(faults), 3)], ", ") + ")"
	}
	if c, ok := nemesis.LookupCause(cause); ok {
		return fmt.Sprintf(c.Text, where)
	}
	return "No injected fault was in force at the time, which points at the lock recipe, the server, or a client slower than its lease."
}

func explainWitness(w witness, t0 int64, cause string, faults []string) string {
	h := w.holder
	switch w.kind {
	case "non-holder-release":
		return fmt.Sprintf("Client %d released %s at %s while client %d certainly held it (its lease ran from %s to at least %s): the release deleted someone else's lock. A plain DEL does this; DELIFEQ would have refused.",
			w.op.Client, w.key, secs(w.op.Call, t0), h.grant.Client, secs(h.start, t0), secs(h.end, t0))
	case "non-holder-extend":
		return fmt.Sprintf("Client %d extended %s at %s while client %d certainly held it: the extend prolonged someone else's lease. A plain PEXPIRE does this; SET ... IFEQ would have refused.",
			w.op.Client, w.key, secs(w.op.Call, t0), h.grant.Client)
	}
	return fmt.Sprintf("Clients %d and %d held %s at the same time: client %d's lease was certainly alive from %s to %s, yet the lock service also granted the lock to client %d at %s. A correct lock server never grants a lock whose lease cannot have expired. %s",
		h.grant.Client, w.op.Client, w.key, h.grant.Client, secs(h.start, t0), secs(h.end, t0), w.op.Client, secs(w.op.Return, t0), causeClause(cause, faults))
}

func explainStuckLock(key string, o *Op, from, to, t0 int64) string {
	s := fmt.Sprintf("No single correct lock server could have given the replies seen on %s between %s and %s, although no two leases were certainly alive at once (unknown outcomes leave several possibilities, and none fits).",
		key, secs(from, t0), secs(to, t0))
	if o != nil {
		s += fmt.Sprintf(" The first reply that cannot be explained is client %d's %s %s at %s.", o.Client, o.F, o.Outcome, secs(o.Call, t0))
	}
	return s
}

func explainLostUpdate(key string, a, b *Section) string {
	return fmt.Sprintf("Clients %d and %d both read %d from the resource for %s and both had %d accepted, so one increment was lost: both acted as holder at once and the resource took both writes. A fenced resource rejects the write that carries the older fence.",
		a.Client, b.Client, a.ReadValue, key, b.WriteValue)
}

func explainStuckResource(key string, s *Section, from, to, t0 int64) string {
	out := fmt.Sprintf("The values the resource returned for %s between %s and %s cannot come from critical sections running one at a time.", key, secs(from, t0), secs(to, t0))
	if s != nil {
		out += fmt.Sprintf(" The first section that does not fit is client %d's (read %d, write %d) starting at %s.", s.Client, s.ReadValue, s.WriteValue, secs(s.Call, t0))
	}
	return out
}

func explainDoubleHolder(d DoubleHolder, t0 int64) string {
	var b strings.Builder
	if d.DoubleGrant {
		fmt.Fprintf(&b, "Clients %d and %d both held %s for %.0f ms from %s: the lock service granted it twice. ", d.StaleClient, d.NewClient, d.Key, d.OverlapMs, secs(d.Start, t0))
		b.WriteString(causeClause(d.Cause, d.Faults))
	} else {
		fmt.Fprintf(&b, "Client %d's lease on %s expired while it still acted as holder; client %d was then granted the lock, legitimately, and for %.0f ms both acted as holder. ", d.StaleClient, d.Key, d.NewClient, d.OverlapMs)
		if d.Cause == "none" {
			b.WriteString("No fault was injected on this client: it simply took longer than its lease (a stall, a slow reply).")
		} else {
			b.WriteString(causeClause(d.Cause, d.Faults))
		}
	}
	if d.NewTurnedAway != "" {
		fmt.Fprintf(&b, " The fence turned the newer holder, client %d, away at its %s (%s): its fence number came from a counter on Valkey that the failover set back, so the resource sided with the older holder.", d.NewClient, d.NewTurnedAway, d.NewTurnedAwayReason)
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

func explainFence(f FenceIssue) string {
	if f.Kind == "duplicate" {
		return fmt.Sprintf("Fence %d on %s was handed to client %d and again to client %d: a failover lost the INCR that issued it, so a fenced resource cannot tell the two holders apart by number alone.",
			f.Fence, f.Key, f.Clients[0], f.Clients[1])
	}
	s := fmt.Sprintf("Client %d received fence %d on %s after client %d had already received %d: the fence counter went backwards (a failover lost INCRs, including those of refused acquires), so a fenced resource will reject the newer holder.",
		f.Clients[1], f.Fence, f.Key, f.Clients[0], f.Previous)
	if f.GrantsBelow > 1 {
		s += fmt.Sprintf(" %d grants in a row stayed below %d before the counter caught up: every one of those holders is turned away.", f.GrantsBelow, f.Previous)
	}
	return s
}
