package checker

import (
	"cmp"
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
)

// OrphanedSpan is a stretch of time in which a key turned contenders away
// ("held by another") while no client believed it held the key: the server
// kept a token for nobody. It is what the lock-library reports of the
// ownership kind have in common (redis/redis-py#4258: a release that fails
// on the wire drops the token, so nobody can release the lock before its
// TTL; the Redisson #7367 class: an acquire retried after a timeout is told
// the lock is taken, by itself, and the caller walks away from it). Not a
// safety violation, and no verdict: a cost in availability, measured.
type OrphanedSpan struct {
	Key    string  `json:"key"`
	StartS float64 `json:"start_s"` // the first such refusal's call
	EndS   float64 `json:"end_s"`   // the last one's return
	Ms     float64 `json:"ms"`
	// Refused counts the acquires turned away in the span.
	Refused int `json:"refused"`
	// LeftBy are the operations on the key, newest first, that may have
	// left the token there: an acquire that failed or whose outcome is
	// unknown, a release or an extend that did not end ok, each while its
	// lease could still be alive at the span's start (at most
	// maxUnknownListed; never empty).
	LeftBy []LeftBy `json:"left_by"`
}

// orphaned finds one key's orphaned spans in its lock operations (call
// order). A contention refusal is explained by a holder when it overlaps
// (widened by eps) the time that holder believed it held the key, or by an
// acquire in flight (a Redlock attempt's partial keys, a queued waiter):
//   - an ok acquire holds from its call to its ok release's return, or to its
//     release's call when that release did not end ok (the client let go);
//   - with no release, to its last ok acquire or extend's return + TTL, the
//     latest the server can keep it (never for a server that does not
//     expire locks);
//   - any acquire that may hold the key while in flight (mayHold), from its
//     call to its return (its done for an unknown one), when it is not the
//     refusal itself.
//
// A refusal no holder explains is orphaned; consecutive ones with no grant
// between them make a span, counted when an operation that did not end ok
// could have left its token there (leftOrphan). A clean run has none: every
// refusal's server saw a token some holder still believed in, or one of an
// attempt in flight.
func orphaned(key string, ops []*Op, eps int64, t0 int64) []OrphanedSpan {
	held, grants := keyHeldSpans(ops)
	x := newExplainer(held)
	slices.Sort(grants)
	var out []OrphanedSpan
	var cur *OrphanedSpan
	var curFrom, curTo int64
	flush := func() {
		if cur != nil {
			cur.StartS, cur.EndS, cur.Ms = rel(curFrom, t0), rel(curTo, t0), float64(curTo-curFrom)/1e6
			// Only a span some operation could have left counts: refusals
			// with no holder and nothing left behind are attempts in flight
			// turning each other away (Redlock's split votes: redsync's
			// refusals name the nodes taken, not the ones it wrote to).
			if cur.LeftBy = leftOrphan(ops, curFrom, eps, t0); len(cur.LeftBy) > 0 {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	for _, o := range ops {
		if o.F != history.FAcquire || o.Outcome != history.Fail || o.Return == never ||
			history.RefusalReason(o.Err) != "contention" || x.explained(o, eps) {
			continue
		}
		if cur != nil {
			// A grant returned between the span's last refusal and this one
			// ends the span: somebody had the lock again.
			i, _ := slices.BinarySearch(grants, curTo)
			if i < len(grants) && grants[i] <= o.Call {
				flush()
			}
		}
		if cur == nil {
			cur = &OrphanedSpan{Key: key}
			curFrom, curTo = o.Call, o.Return
		}
		cur.Refused++
		curTo = max(curTo, o.Return)
	}
	flush()
	return out
}

// keyHeld is a time some operation may have held the key; who is the op it
// comes from, so that a refusal is not explained by its own attempt.
type keyHeld struct {
	from, to int64
	who      *Op
}

// keyTenure is one token's hold from its first ok acquire.
type keyTenure struct {
	from, lastOK int64
	ttl          int64
	noExpiry     bool
	end          int64 // 0 while open
	who          *Op
}

// keyHeldSpans lists, in order of their start, the spans in which the key may
// have been held (each tenure, each acquire that may hold while in flight),
// and the returns of the ok acquires.
func keyHeldSpans(ops []*Op) ([]keyHeld, []int64) {
	var held []keyHeld
	var grants []int64
	open := map[string]*keyTenure{}
	var done []*keyTenure
	closeT := func(tok string, at int64) {
		if t := open[tok]; t != nil {
			t.end = at
			delete(open, tok)
		}
	}
	for _, o := range ops {
		switch {
		case o.revocation():
			// The server ended the session and what it held, by the
			// heal; one never healed may not have happened.
			if o.Outcome == history.OK {
				for _, tok := range o.notes.session.tokens {
					closeT(tok, o.Return)
				}
			}
		case o.F == history.FAcquire:
			to := o.Return
			if to == never {
				to = max(o.Done, o.Call)
			}
			if mayHold(o) {
				held = append(held, keyHeld{o.Call, to, o})
			}
			if o.Outcome != history.OK {
				continue
			}
			grants = append(grants, o.Return)
			if t := open[o.Token]; t != nil {
				t.lastOK = max(t.lastOK, o.Return)
				continue
			}
			t := &keyTenure{from: o.Call, lastOK: o.Return, ttl: o.TTL, noExpiry: o.NoExpiry(), who: o}
			open[o.Token] = t
			done = append(done, t)
		case o.F == history.FExtend:
			if t := open[o.Token]; t != nil && o.Outcome == history.OK {
				t.lastOK, t.ttl = max(t.lastOK, o.Return), max(t.ttl, o.TTL)
			}
		case o.F == history.FRelease:
			if o.Outcome == history.OK {
				closeT(o.Token, o.Return)
			} else {
				closeT(o.Token, o.Call)
			}
		}
	}
	for _, t := range done {
		end := t.end
		if end == 0 {
			end = satAdd(t.lastOK, t.ttl)
			if t.noExpiry {
				end = never
			}
		}
		held = append(held, keyHeld{t.from, end, t.who})
	}
	slices.SortFunc(held, func(a, b keyHeld) int { return cmp.Compare(a.from, b.from) })
	return held, grants
}

// explainer answers "does a span of another op, starting at or before t,
// reach t" with one binary search: reach[i] holds the two latest ends among
// held[0..i] from different ops.
type explainer struct {
	held  []keyHeld
	reach []reachTop
}

type reachTop struct {
	end1, end2 int64
	who1       *Op
}

func newExplainer(held []keyHeld) explainer {
	reach := make([]reachTop, len(held))
	var r reachTop
	for i, h := range held {
		switch {
		case h.to > r.end1 && h.who == r.who1:
			r.end1 = h.to
		case h.to > r.end1:
			r = reachTop{h.to, r.end1, h.who}
		case h.to > r.end2 && h.who != r.who1:
			r.end2 = h.to
		}
		reach[i] = r
	}
	return explainer{held, reach}
}

// explained says whether a holder (or an attempt in flight) other than the
// refusal itself explains it, widened by eps.
func (x explainer) explained(o *Op, eps int64) bool {
	// The last span starting at or before the refusal's return.
	i, _ := slices.BinarySearchFunc(x.held, satAdd(o.Return, eps), func(h keyHeld, t int64) int {
		if h.from <= t {
			return -1
		}
		return 1
	})
	if i == 0 {
		return false
	}
	end := x.reach[i-1].end1
	if x.reach[i-1].who1 == o {
		end = x.reach[i-1].end2
	}
	return end >= o.Call-eps
}

// mayHold says whether an acquire may have held the key while in flight:
// one turned away for another holder did not (a SET NX refused writes
// nothing), unless it is a Redlock acquire that some node said OK to.
func mayHold(o *Op) bool {
	if o.Outcome != history.Fail || history.RefusalReason(o.Err) != "contention" {
		return true
	}
	t, ok := history.ParseQuorumTally(o.Err)
	return ok && t.OK+t.Unknown > 0
}

// leftOrphan lists the operations that may have left a token on the key at
// from: not ok, and with a lease that could reach from. A plain refusal
// left nothing (a SET NX turned away writes no key); a Redlock acquire
// refused by a majority may have left its key on the nodes that said OK.
func leftOrphan(ops []*Op, from, eps, t0 int64) []LeftBy {
	var out []LeftBy
	// ops are in call order: start at the last call before from, and look
	// at most leftOrphanScan operations back (a fault can leave thousands
	// of refusals on a key).
	end, _ := slices.BinarySearchFunc(ops, from, func(o *Op, t int64) int {
		if o.Call <= t {
			return -1
		}
		return 1
	})
	for i := end - 1; i >= 0 && i >= end-leftOrphanScan && len(out) < maxUnknownListed; i-- {
		o := ops[i]
		if o.Outcome == history.OK {
			continue
		}
		if o.F == history.FAcquire && (!mayHold(o) || deniedBefore(ops[i+1:end], o.Token)) {
			continue
		}
		last, ttl, noExpiry := o.Return, o.TTL, o.NoExpiry()
		if last == never {
			last = max(o.Done, o.Call)
		}
		if o.F == history.FRelease {
			// A release that did not end ok leaves the holder's own lease:
			// its last ok acquire or extend of the token.
			g := lastGrantOf(ops[:i], o.Token)
			if g == nil {
				continue
			}
			last, ttl, noExpiry = g.Return, g.TTL, g.NoExpiry()
		}
		if noExpiry || satAdd(satAdd(last, ttl), eps) >= from {
			out = append(out, leftByOf(o, t0))
		}
	}
	return out
}

// deniedBefore reports whether a release of token among ops (those called
// after its acquire and before the span) found the key without it: it
// deleted it (ok) or the server said the token does not hold it
// (history.SaysNotHeld, as the double-holder count reads it). Such an acquire left nothing: a switch's
// clients clean up after their timed-out acquires, and those crowded the
// one release that did leave its key out of the list.
func deniedBefore(ops []*Op, token string) bool {
	for _, o := range ops {
		if o.F == history.FRelease && o.Token == token &&
			(o.Outcome == history.OK || (o.Outcome == history.Fail && history.SaysNotHeld(o.Err))) {
			return true
		}
	}
	return false
}

// leftOrphanScan bounds how far back leftOrphan looks from a span's start.
const leftOrphanScan = 4096

// lastGrantOf is the token's last ok acquire or extend in ops, nil when it
// has none.
func lastGrantOf(ops []*Op, token string) *Op {
	for i := len(ops) - 1; i >= 0 && i >= len(ops)-leftOrphanScan; i-- {
		o := ops[i]
		if o.Token == token && o.Outcome == history.OK && (o.F == history.FAcquire || o.F == history.FExtend) {
			return o
		}
	}
	return nil
}
