package checker

import (
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// tenure is the interval in which a token certainly held its lock: from its
// grant's return to the earliest possible expiry of its last successful grant
// or extend, cut at the call of its first release attempt, whatever that
// attempt's outcome. A correct lease server cannot let two tenures of one key
// overlap, nor let another token's release or extend succeed inside one.
type tenure struct {
	token string
	key   string
	grant *Op
	start int64
	end   int64
}

// witness is a definite lock violation found without search.
type witness struct {
	kind   string // double-grant | non-holder-release | non-holder-extend
	key    string
	holder *tenure // the token that certainly held the lock
	other  *tenure // the second holder, for double grants
	op     *Op     // the offending grant, release or extend
	start  int64   // when both were in force
	end    int64
}

// tenures computes every token's certain holding interval on one key. ops are
// the key's lock operations in call order.
func tenures(ops []*Op, eps int64) []*tenure {
	by := make(map[string]*tenure)
	var order []*tenure
	released := make(map[string]int64)
	for _, o := range ops {
		switch {
		case o.F == history.FAcquire && o.Outcome == history.OK:
			t := by[o.Token]
			if t == nil {
				t = &tenure{token: o.Token, key: o.Key, grant: o, start: o.Return, end: o.Call + o.Lease() - eps}
				by[o.Token] = t
				order = append(order, t)
			} else if e := o.Call + o.Lease() - eps; e > t.end {
				t.end = e
			}
		case o.F == history.FRelease:
			if _, seen := released[o.Token]; !seen {
				released[o.Token] = o.Call
			}
		}
	}
	// An extend that succeeded proves the lease was alive when it was applied,
	// so the lease lasts at least ttl past its call. An extend with an unknown
	// outcome can only prolong a lease; it neither cuts nor prolongs the
	// certain interval.
	for _, o := range ops {
		if o.F == history.FExtend && o.Outcome == history.OK {
			if t := by[o.Token]; t != nil && o.Call >= t.grant.Call {
				if e := o.Call + o.Lease() - eps; e > t.end {
					t.end = e
				}
			}
		}
	}
	out := order[:0]
	for _, t := range order {
		if c, ok := released[t.token]; ok && c < t.end {
			t.end = c
		}
		if t.end > t.start {
			out = append(out, t)
		}
	}
	return out
}

// findWitnesses runs the direct O(n log n) check on one key.
func findWitnesses(ops []*Op, eps int64) []witness {
	ts := tenures(ops, eps)
	sort.Slice(ts, func(i, j int) bool { return ts[i].start < ts[j].start })
	var ws []witness
	seen := make(map[[2]string]bool)
	var widest *tenure
	for _, t := range ts {
		if widest != nil && widest.end > t.start && widest.token != t.token {
			seen[[2]string{widest.token, t.token}] = true
			ws = append(ws, witness{kind: "double-grant", key: t.key, holder: widest, other: t, op: t.grant,
				start: t.start, end: min(widest.end, t.end)})
		}
		if widest == nil || t.end > widest.end {
			widest = t
		}
	}
	// Successful operations wholly inside another token's tenure. Queries and
	// tenures are both swept in start order, keeping the two widest tenures
	// with distinct tokens, so that a query can skip its own token's tenure.
	var qs []*Op
	for _, o := range ops {
		if o.Outcome == history.OK && o.Return != never {
			qs = append(qs, o)
		}
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Call < qs[j].Call })
	var top [2]*tenure
	i := 0
	for _, q := range qs {
		for ; i < len(ts) && ts[i].start <= q.Call; i++ {
			top = pushTop(top, ts[i])
		}
		h := top[0]
		if h != nil && h.token == q.Token {
			h = top[1]
		}
		// A holder granted during another's tenure is already reported as a
		// double grant; its own later releases and extends follow from it.
		if h == nil || q.Return >= h.end || (q.F != history.FAcquire && seen[[2]string{h.token, q.Token}]) {
			continue
		}
		switch q.F {
		case history.FAcquire:
			if seen[[2]string{h.token, q.Token}] {
				continue
			}
			seen[[2]string{h.token, q.Token}] = true
			ws = append(ws, witness{kind: "double-grant", key: q.Key, holder: h, op: q, start: q.Call, end: q.Return})
		case history.FRelease:
			ws = append(ws, witness{kind: "non-holder-release", key: q.Key, holder: h, op: q, start: q.Call, end: q.Return})
		case history.FExtend:
			ws = append(ws, witness{kind: "non-holder-extend", key: q.Key, holder: h, op: q, start: q.Call, end: q.Return})
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].start < ws[j].start })
	return ws
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
