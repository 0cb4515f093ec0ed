package checker

import (
	"container/heap"
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// tenure is the interval in which one grant certainly held its lock: from the
// grant's return to the earliest possible expiry set by the latest successful
// grant or extend of that grant, cut at its first release that may have taken
// effect. A token granted again starts a new tenure. A correct lease server
// cannot let two tenures of one key overlap, nor let another token's release
// or extend succeed inside one. docs/checker.md states the rule; the comments
// in grantTenure say why each bound is certain.
type tenure struct {
	token string
	key   string
	grant *Op
	// setBy is the grant or extend whose call the end is counted from.
	setBy *Op
	start int64
	end   int64
}

// witness is a definite lock violation found without search.
type witness struct {
	kind   string // double-grant | non-holder-release | non-holder-extend | lease-lost
	key    string
	holder *tenure // the grant that certainly held the lock
	other  *tenure // the second holder, for double grants
	op     *Op     // the offending grant, release or extend; for lease-lost, the not-held reply
	// regrant is, for lease-lost, the first grant under another token after
	// the holder was told it no longer held the lock (to it or another
	// client).
	regrant *Op
	// unknownGrant: for a release or extend, its token's own acquire ended
	// with an unknown outcome before it, so the server may well have granted
	// that token too (WAIT released a grant no replica acknowledged, and the
	// release was answered in kind).
	unknownGrant bool
	// told is, for a double grant made after the first holder was told it
	// no longer held the lock, that not-held reply.
	told *Op
	// folded are, for lease-lost and a told double grant, the token pairs (lost lease, later grant)
	// of every grant folded into it, the regrant's first: each was granted
	// while the lost lease could not have expired, so a holder that still
	// acted then (a step in flight) was one of two at once.
	folded [][2]string
	start  int64 // when both were in force
	end    int64
}

// tokenOps are one token's lock operations on one key that may have taken
// effect (ok or unknown), each list in call order. Failed ones had no effect
// and bound nothing.
type tokenOps struct {
	grants   []*Op // ok acquires
	infoAcq  []*Op // acquires with unknown outcome
	extends  []*Op // ok and unknown extends
	okExt    []*Op // ok extends
	releases []*Op // ok and unknown releases

	grantMaxRet []int64 // grantMaxRet[i]: latest return among grants[:i+1]
	extMinEnd   []int64 // extMinEnd[i]: least call+ttl among extends[i:]
	relMaxRet   []int64 // relMaxRet[i]: latest return among releases[:i+1]
}

// tenures computes every grant's certain holding interval on one key. ops are
// the key's lock operations in call order.
func tenures(ops []*Op, eps int64) []*tenure {
	by := make(map[string]*tokenOps)
	var order []string
	for _, o := range ops {
		if o.Outcome == history.Fail {
			continue
		}
		t := by[o.Token]
		if t == nil {
			t = &tokenOps{}
			by[o.Token] = t
			order = append(order, o.Token)
		}
		switch o.F {
		case history.FAcquire:
			if o.Outcome == history.OK {
				t.grants = append(t.grants, o)
			} else {
				t.infoAcq = append(t.infoAcq, o)
			}
		case history.FExtend:
			t.extends = append(t.extends, o)
			if o.Outcome == history.OK {
				t.okExt = append(t.okExt, o)
			}
		case history.FRelease:
			t.releases = append(t.releases, o)
		}
	}
	// A session's end may release any grant the session held when it ended
	// (revoke): it cuts the tenure of each of them, not only the one the
	// fault named.
	touched := map[*tokenOps]bool{}
	for _, o := range ops {
		if !o.revocation() {
			continue
		}
		for _, tok := range o.notes.session.tokens {
			if t := by[tok]; t != nil && tok != o.Token {
				t.releases = append(t.releases, o)
				touched[t] = true
			}
		}
	}
	for t := range touched { // back in call order, as prepare expects
		sort.SliceStable(t.releases, func(i, j int) bool { return t.releases[i].Call < t.releases[j].Call })
	}
	var out []*tenure
	for _, tok := range order {
		t := by[tok]
		if len(t.grants) == 0 {
			continue
		}
		t.prepare()
		var h ttlHeap
		next := 0 // extends[:next] are in h
		for i, g := range t.grants {
			tn := t.grantTenure(i, g, &h, &next, eps)
			if tn.end > tn.start {
				out = append(out, tn)
			}
		}
	}
	return out
}

func (t *tokenOps) prepare() {
	t.grantMaxRet = make([]int64, len(t.grants))
	for i, g := range t.grants {
		t.grantMaxRet[i] = g.Return
		if i > 0 {
			t.grantMaxRet[i] = max(t.grantMaxRet[i], t.grantMaxRet[i-1])
		}
	}
	t.extMinEnd = make([]int64, len(t.extends)+1)
	t.extMinEnd[len(t.extends)] = never
	for i := len(t.extends) - 1; i >= 0; i-- {
		e := t.extends[i]
		t.extMinEnd[i] = min(t.extMinEnd[i+1], satAdd(e.Call, e.Lease()))
	}
	t.relMaxRet = make([]int64, len(t.releases))
	for i, r := range t.releases {
		t.relMaxRet[i] = r.Return
		if i > 0 {
			t.relMaxRet[i] = max(t.relMaxRet[i], t.relMaxRet[i-1])
		}
	}
}

// grantTenure is the certain interval of grant i. h holds the extends called
// before the previous grant's reference call; grants are visited in call
// order, so reference calls only grow and h is filled incrementally.
func (t *tokenOps) grantTenure(i int, g *Op, h *ttlHeap, next *int, eps int64) *tenure {
	tn := &tenure{token: g.Token, key: g.Key, grant: g, setBy: g, start: g.Return}
	nextCall := int64(never)
	if i+1 < len(t.grants) {
		nextCall = t.grants[i+1].Call
	}
	// The reference op L is the latest successful extend of this grant, when
	// it certainly took effect on this grant's lease: called after the grant
	// returned, and with no other acquire of the token that could have taken
	// effect between the two (the key can only hold this token again through
	// an acquire of it, so L then proves the key held it all along). Else the
	// grant itself.
	j := sort.Search(len(t.okExt), func(k int) bool { return t.okExt[k].Call >= nextCall }) - 1
	if j >= 0 && t.okExt[j].Call > g.Return {
		l := t.okExt[j]
		competing := (i > 0 && t.grantMaxRet[i-1] >= g.Call) ||
			(i+1 < len(t.grants) && t.grants[i+1].Call < l.Return) ||
			(len(t.infoAcq) > 0 && t.infoAcq[0].Call < l.Return)
		if !competing {
			tn.setBy = l
		}
	}
	cL := tn.setBy.Call
	// Once L has taken effect (at t ≥ cL) the lease lasts ttl_L, unless an
	// extend applied later replaces it: any extend that may take effect after
	// L (it had not returned by cL) sets an expiry of at least
	// max(its call, cL) + its ttl. A shorter one shortens the lease: SET PX
	// replaces the expiry. Acquires of the token cannot take effect while it
	// holds the key, so they never shorten it.
	end := satAdd(cL, tn.setBy.Lease())
	for ; *next < len(t.extends) && t.extends[*next].Call < cL; *next++ {
		heap.Push(h, t.extends[*next])
	}
	for h.Len() > 0 && (*h)[0].Return < cL {
		heap.Pop(h) // applied before every later reference call
	}
	// h may still hold extends with small ttls that returned before cL; they
	// sit below the top only when their ttl is larger, so the top is exact.
	if h.Len() > 0 {
		end = min(end, satAdd(cL, minLiveTTL(h, cL)))
	}
	end = min(end, t.extMinEnd[*next])
	if end != never {
		end -= eps
	}
	// A release that may have taken effect after the grant ends the lease at
	// its call at the earliest; one sent before the grant and still in
	// flight may free the key at any moment after it.
	k := sort.Search(len(t.releases), func(k int) bool { return t.releases[k].Call >= g.Call })
	if k > 0 && t.relMaxRet[k-1] >= g.Call {
		end = min(end, g.Call)
	}
	if k < len(t.releases) {
		end = min(end, t.releases[k].Call)
	}
	tn.end = end
	return tn
}

// minLiveTTL is the least ttl among the heap's extends that had not returned
// by cL. Entries that returned earlier are popped from the top lazily; an
// earlier one buried below a live top has a larger ttl and cannot matter.
func minLiveTTL(h *ttlHeap, cL int64) int64 {
	for h.Len() > 0 && (*h)[0].Return < cL {
		heap.Pop(h)
	}
	if h.Len() == 0 {
		return never
	}
	return (*h)[0].Lease()
}

// ttlHeap is a min-heap of extends by lease (the ttl, or a Redlock
// validity when shorter).
type ttlHeap []*Op

func (h ttlHeap) Len() int           { return len(h) }
func (h ttlHeap) Less(i, j int) bool { return h[i].Lease() < h[j].Lease() }
func (h ttlHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ttlHeap) Push(x any)        { *h = append(*h, x.(*Op)) }
func (h *ttlHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// findWitnesses runs the direct O(n log n) check on one key.
func findWitnesses(ops []*Op, eps int64) []witness {
	ws, _ := witnessesAndTenures(ops, eps)
	return ws
}

// witnessesAndTenures is findWitnesses with the key's tenures, which the
// coverage of the fault windows reads (a lease certainly alive when a fault
// began).
func witnessesAndTenures(ops []*Op, eps int64) ([]witness, []*tenure) {
	ts := tenures(ops, eps)
	sort.Slice(ts, func(i, j int) bool { return ts[i].start < ts[j].start })
	var ws []witness
	seen := make(map[[2]*Op]bool)
	var widest *tenure
	for _, t := range ts {
		if widest != nil && widest.end > t.start {
			seen[[2]*Op{widest.grant, t.grant}] = true
			ws = append(ws, witness{kind: "double-grant", key: t.key, holder: widest, other: t, op: t.grant,
				start: t.start, end: min(widest.end, t.end)})
		}
		if widest == nil || t.end > widest.end {
			widest = t
		}
	}
	// Successful operations wholly inside another grant's tenure. Queries and
	// tenures are both swept in start order, keeping the two widest tenures
	// with distinct tokens, so that a release or extend can skip its own
	// token's tenure. A tenure enters the sweep only once it started strictly
	// before the query's call, so a grant never meets its own tenure.
	var qs []*Op
	unknownBefore := make(map[string]int64) // token → call of its first unknown acquire
	for _, o := range ops {
		// A session's end releases what the session holds, if anything: it
		// is never a release by a non-holder.
		if o.Outcome == history.OK && o.Return != never && !o.revocation() {
			qs = append(qs, o)
		}
		if o.F == history.FAcquire && o.Outcome == history.Info {
			if c, ok := unknownBefore[o.Token]; !ok || o.Call < c {
				unknownBefore[o.Token] = o.Call
			}
		}
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Call < qs[j].Call })
	var top [2]*tenure
	i := 0
	for _, q := range qs {
		for ; i < len(ts) && ts[i].start < q.Call; i++ {
			top = pushTop(top, ts[i])
		}
		h := top[0]
		if q.F != history.FAcquire && h != nil && h.token == q.Token {
			h = top[1]
		}
		if h == nil || q.Return >= h.end {
			continue
		}
		switch q.F {
		case history.FAcquire:
			if seen[[2]*Op{h.grant, q}] {
				continue
			}
			seen[[2]*Op{h.grant, q}] = true
			ws = append(ws, witness{kind: "double-grant", key: q.Key, holder: h, op: q, start: q.Call, end: q.Return})
		case history.FRelease, history.FExtend:
			// A holder granted during another's tenure is already reported as
			// a double grant; its own later releases and extends follow from it.
			if grantedInside(ws, h, q) {
				continue
			}
			kind := "non-holder-release"
			if q.F == history.FExtend {
				kind = "non-holder-extend"
			}
			ws = append(ws, witness{kind: kind, key: q.Key, holder: h, op: q, start: q.Call, end: q.Return,
				unknownGrant: unknownBefore[q.Token] != 0 && unknownBefore[q.Token] < q.Call})
		}
	}
	ws = leaseLost(ops, ws)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].start < ws[j].start })
	return ws, ts
}

// leaseLost handles the double grants made after the server had told the
// first holder that it no longer held the lock (its extend or release was
// answered "not held"). The server then ended the lease before it could have
// expired, which no correct lease server does, so the verdict stands; but it
// is one lease lost, not a new violation per later grant. The first grant
// after the reply makes the lease's one finding: granted to the same client
// it is a lease-lost (there were never two holders, the client had been
// told), to another client a double grant that says the first was told
// (its told field); the later grants against the same lease fold into it
// (the demo: 89 double grants were 24 between two believing holders and the
// grants that followed a told lease, each of which had counted again).
// Grants before the reply stay double grants: then both clients believed.
func leaseLost(ops []*Op, ws []witness) []witness {
	told := make(map[string]*Op) // token → its first not-held reply
	for _, o := range ops {
		if o.Outcome == history.Fail && (o.F == history.FRelease || o.F == history.FExtend) && history.SaysNotHeld(o.Err) {
			if t := told[o.Token]; t == nil || o.Call < t.Call {
				told[o.Token] = o
			}
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].op.Call < ws[j].op.Call })
	lost := make(map[*tenure]int) // told lease → its finding in out
	var out []witness
	for _, w := range ws {
		if w.kind == "double-grant" && w.holder.token != w.op.Token {
			r := told[w.holder.token]
			if r != nil && r.Return != never && r.Return <= w.op.Call && r.Call >= w.holder.start {
				pair := [2]string{w.holder.token, w.op.Token}
				if i, ok := lost[w.holder]; ok {
					out[i].folded = append(out[i].folded, pair)
					continue
				}
				lost[w.holder] = len(out)
				w.folded = [][2]string{pair}
				if w.holder.grant.Client == w.op.Client {
					w.kind, w.regrant, w.op, w.other = "lease-lost", w.op, r, nil
					w.start, w.end = r.Call, r.Return
				} else {
					w.told = r
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// grantedInside reports whether q's token was granted inside h's tenure
// before q was sent, a double grant already found.
func grantedInside(ws []witness, h *tenure, q *Op) bool {
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].kind == "double-grant" && ws[i].holder == h && ws[i].op.Token == q.Token && ws[i].op.Return <= q.Call {
			return true
		}
	}
	return false
}

// pushTop keeps the two tenures with the latest ends, with distinct tokens.
func pushTop(top [2]*tenure, t *tenure) [2]*tenure {
	switch {
	case top[0] == nil || t.end > top[0].end:
		if top[0] != nil && top[0].token != t.token {
			top[1] = top[0]
		}
		top[0] = t
	case t.token != top[0].token && (top[1] == nil || t.end > top[1].end):
		top[1] = t
	}
	return top
}
