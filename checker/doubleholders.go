package checker

import (
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// acting is the interval in which a client acted as the holder of one grant:
// from the grant's return to the later of the reply of its last read or
// write and the end of its belief, min(first release call, call + ttl of its
// latest successful grant or extend). It is the client's belief, not the
// server's: a paused client acts as holder long after its lease has expired.
// Releases and extends are not acts of a holder: a release sent late ends the
// belief at its call but does not prolong it.
type acting struct {
	token  string
	key    string
	client int
	grant  *Op
	start  int64
	end    int64
	// leaseEnd is when its lease could have expired at the earliest, or
	// its client let go: a grant to another before it is a double grant.
	leaseEnd int64
	writes   []*Op
	// turnedAway is the first read or write of this grant the fence rejected.
	turnedAway *Op
	// fenceSource is where the tenure's number came from: the grant's own
	// (valkey, lease-row) or the resource's sequence; "" without a fence.
	fenceSource string
	// fence is the tenure's number (the grant's, or the resource's asked
	// for after it); 0 without one.
	fence int64
}

func actingIntervals(ops []Op) map[string][]*acting {
	// Every op of a token belongs to its latest grant called before it; a
	// token granted again starts a new interval.
	type tokKey struct{ key, token string }
	grants := make(map[tokKey][]*acting)
	var order []*acting
	for i := range ops {
		o := &ops[i]
		if o.F == history.FAcquire && o.Outcome == history.OK {
			a := &acting{token: o.Token, key: o.Key, client: o.Client, grant: o, start: o.Return, end: o.Return}
			if o.Fence != 0 {
				a.fenceSource, a.fence = o.FenceSource(), o.Fence
			}
			k := tokKey{o.Key, o.Token}
			grants[k] = append(grants[k], a)
			order = append(order, a)
		}
	}
	for _, as := range grants {
		sort.Slice(as, func(i, j int) bool { return as[i].grant.Call < as[j].grant.Call })
	}
	belief := make(map[*acting]*Op)
	release := make(map[*acting]int64)
	told := make(map[*acting]int64)
	for i := range ops {
		o := &ops[i]
		as := grants[tokKey{o.Key, o.Token}]
		j := sort.Search(len(as), func(j int) bool { return as[j].grant.Call > o.Call }) - 1
		if j < 0 {
			continue
		}
		a := as[j]
		// Told "not held", the client stops at its next step (a write in
		// flight still lands and is counted below): its belief ends at the
		// reply, as a release's does at its call.
		if (o.F == history.FExtend || o.F == history.FRelease) && o.Outcome == history.Fail && o.Return != never && history.SaysNotHeld(o.Err) {
			if r, seen := told[a]; !seen || o.Return < r {
				told[a] = o.Return
			}
			continue
		}
		switch o.F {
		case history.FAcquire, history.FExtend:
			if o.Outcome == history.OK {
				if b := belief[a]; b == nil || o.Call >= b.Call {
					belief[a] = o
				}
			}
			continue
		case history.FRelease:
			if r, seen := release[a]; !seen || o.Call < r {
				release[a] = o.Call
			}
			continue
		}
		if o.F == history.FFence && o.Outcome == history.OK && o.Fence != 0 {
			a.fenceSource, a.fence = o.FenceSource(), o.Fence
		}
		// A read or write may land at the resource until its reply; a failed
		// one did not act.
		end := o.Call
		if o.Outcome != history.Fail && o.Done > end {
			end = o.Done
		}
		if end > a.end {
			a.end = end
		}
		if o.F == history.FWrite {
			a.writes = append(a.writes, o)
		}
		if o.Verdict() == history.Rejected && a.turnedAway == nil {
			a.turnedAway = o
		}
	}
	out := make(map[string][]*acting)
	for _, a := range order {
		b := belief[a]
		if b == nil {
			b = a.grant
		}
		until := satAdd(b.Call, b.Lease())
		if r, ok := release[a]; ok {
			until = min(until, r)
		}
		// The lease as a correct server keeps it; the belief ends earlier
		// when the server said "not held".
		a.leaseEnd = until
		if r, ok := told[a]; ok {
			until = min(until, r)
		}
		a.end = max(a.end, until)
		out[a.key] = append(out[a.key], a)
	}
	return out
}

// doubleHolders finds every pair of tokens whose acting intervals overlap and
// judges the stale holder's writes. grants holds the token pairs the direct
// check proved were granted at once.
func doubleHolders(ops []Op, fs []fault, idx *AttemptIndex, grants map[[2]string]bool, revokedAt map[string]int64, slack, eps int64) ([]DoubleHolder, StaleWrites) {
	var dhs []DoubleHolder
	var sw StaleWrites
	stale := make(map[*Op]bool)
	intervals := actingIntervals(ops)
	keys := make([]string, 0, len(intervals))
	for k := range intervals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		as := intervals[key]
		sort.Slice(as, func(i, j int) bool { return as[i].start < as[j].start })
		var active []*acting
		for _, b := range as {
			keep := active[:0]
			for _, a := range active {
				if a.end > b.start {
					keep = append(keep, a)
				}
			}
			active = keep
			for _, a := range active {
				if a.client == b.client && a.token == b.token {
					continue // one client's own re-grant is not two holders
				}
				end := min(a.end, b.end)
				if end <= b.start {
					continue
				}
				// The direct check reports each grant against one lease
				// only (the widest); a grant made inside this older lease is
				// a double grant too.
				// A lease the server ended honestly before the newer grant
				// (a revoked session) was no lease to grant over.
				rv, revoked := revokedAt[a.token]
				revoked = revoked && rv <= b.grant.Call
				dg := !revoked && (grants[[2]string{a.token, b.token}] || grants[[2]string{b.token, a.token}] ||
					(b.grant.Call > a.grant.Return && b.grant.Return < a.leaseEnd-eps))
				cause, names := attribute(fs, a.grant.Call, b.start, end, slack, []int{a.client, b.client}, dg)
				d := DoubleHolder{Key: key, StaleClient: a.client, NewClient: b.client, StaleToken: a.token,
					NewToken: b.token, Start: b.start, End: end, OverlapMs: float64(end-b.start) / 1e6, StaleGranted: a.grant.Return,
					DoubleGrant: dg, Revoked: revoked, Cause: cause, Faults: names, StaleWrite: "none", FenceSource: b.fenceSource,
					staleCall: a.grant.Call, staleGrant: a.grant.Return}
				for _, w := range a.writes {
					if w.Call < b.start {
						continue
					}
					v, _, _ := writeVerdict(w, idx, nil)
					d.StaleWrite = worse(d.StaleWrite, v)
					if stale[w] {
						continue
					}
					stale[w] = true
					sw.Attempted++
					switch v {
					case history.Accepted:
						sw.Accepted++
					case history.Rejected:
						sw.Rejected++
					default:
						sw.Unknown++
					}
				}
				if t := a.turnedAway; t != nil && t.Call >= b.start {
					d.StaleTurnedAway = t.F
				}
				if t := b.turnedAway; t != nil && t.Call < end+slack && a.fence > 0 && b.fence > a.fence {
					// The newer holder's number is above the older one's, so
					// what turned it away was a third holder's, higher still:
					// not this pair's fence siding with its older holder.
					d.NewOutranked = t.F
					d.NewTurnedAwayReason = t.Reason()
					d.OutrankedByLater = grantedLaterHigher(as, b, t.Call)
				} else if t != nil && t.Call < end+slack {
					d.NewTurnedAway = t.F
					d.NewTurnedAwayReason = t.Reason()
					// Sent before the older grant came back, the newer
					// acquire may have been the one the server ran first:
					// its lower number is then its own, not a counter set
					// back (an evicted key granted again while the replies
					// queued behind the eviction).
					d.NewSentFirst = b.grant.Call < a.grant.Return
				}
				dhs = append(dhs, d)
			}
			active = append(active, b)
		}
	}
	return dhs, sw
}

// grantedLaterHigher reports whether a holder granted after b, with a
// higher number, had its grant back before at: the newest holder, whose
// number a fenced resource rightly prefers (an evicted key granted again and
// again), rather than an older one's from before a counter was set back.
func grantedLaterHigher(as []*acting, b *acting, at int64) bool {
	for _, c := range as {
		if c != b && c.fence > b.fence && c.grant.Call > b.grant.Return && c.start < at {
			return true
		}
	}
	return false
}

// exposure is how long double holders lasted: per key the union of their
// overlaps (three at once count once), summed over keys in key order, and
// the longest overlap. dhs are by key.
func exposure(dhs []DoubleHolder) Exposure {
	var exp Exposure
	for i := 0; i < len(dhs); {
		var overlaps [][2]int64
		j := i
		for ; j < len(dhs) && dhs[j].Key == dhs[i].Key; j++ {
			exp.Max = max(exp.Max, dhs[j].OverlapMs)
			overlaps = append(overlaps, [2]int64{dhs[j].Start, dhs[j].End})
		}
		exp.Total += unionMs(overlaps)
		i = j
	}
	return exp
}

// worse folds one stale write's verdict into a double holder's: an accepted
// write is the headline, then an unknown one, then a rejected one.
func worse(cur, v string) string {
	rank := map[string]int{"none": 0, history.Rejected: 1, "": 2, "unknown": 2, history.Accepted: 3}
	if v == "" {
		v = "unknown"
	}
	if rank[v] > rank[cur] {
		return v
	}
	return cur
}

// unionMs is the length of the union of intervals, so that three clients
// holding at once are not counted twice.
func unionMs(iv [][2]int64) float64 {
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	var total, curS, curE int64
	started := false
	for _, x := range iv {
		if !started || x[0] > curE {
			if started {
				total += curE - curS
			}
			curS, curE, started = x[0], x[1], true
		} else if x[1] > curE {
			curE = x[1]
		}
	}
	if started {
		total += curE - curS
	}
	return float64(total) / 1e6
}
