package checker

import (
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// acting is the interval in which a client acted as the holder of one token:
// from its acquire's ok to its last read, write, extend or release attempt. It
// is the client's belief, not the server's: a paused client acts as holder
// long after its lease has expired.
type acting struct {
	token  string
	key    string
	client int
	grant  *Op
	start  int64
	end    int64
	writes []*Op
	// turnedAway is the first read or write of this tenure the fence rejected.
	turnedAway *Op
}

func actingIntervals(ops []Op) map[string][]*acting {
	by := make(map[string]*acting)
	var order []*acting
	for i := range ops {
		o := &ops[i]
		if o.F == history.FAcquire && o.Outcome == history.OK {
			if by[o.Token] == nil {
				a := &acting{token: o.Token, key: o.Key, client: o.Client, grant: o, start: o.Return, end: o.Return}
				by[o.Token] = a
				order = append(order, a)
			}
		}
	}
	// Until it releases, a client believes it holds the lock for ttl after its
	// last successful grant or extend was sent, whether or not it acts.
	belief := make(map[string]int64)
	release := make(map[string]int64)
	for i := range ops {
		o := &ops[i]
		a := by[o.Token]
		if a == nil || o.Call < a.grant.Call {
			continue
		}
		if (o.F == history.FAcquire || o.F == history.FExtend) && o.Outcome == history.OK {
			belief[o.Token] = max(belief[o.Token], o.Call+o.Lease())
		}
		if o.F == history.FRelease {
			if _, seen := release[o.Token]; !seen {
				release[o.Token] = o.Call
			}
		}
		if o.F == history.FAcquire {
			continue
		}
		// A read or write may land at the resource until its reply; a release,
		// extend or refused attempt acts only when it is sent.
		end := o.Call
		if (o.F == history.FRead || o.F == history.FWrite) && o.Outcome != history.Fail && o.Done > end {
			end = o.Done
		}
		if end > a.end {
			a.end = end
		}
		if o.F == history.FWrite {
			a.writes = append(a.writes, o)
		}
		if (o.F == history.FRead || o.F == history.FWrite) && o.Verdict == history.Rejected && a.turnedAway == nil {
			a.turnedAway = o
		}
	}
	out := make(map[string][]*acting)
	for _, a := range order {
		until := belief[a.token]
		if r, ok := release[a.token]; ok {
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
func doubleHolders(ops []Op, fs []fault, idx attemptIndex, grants map[[2]string]bool, slack int64) ([]DoubleHolder, StaleWrites, Exposure) {
	var dhs []DoubleHolder
	var sw StaleWrites
	var exp Exposure
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
		var overlaps [][2]int64
		for _, b := range as {
			keep := active[:0]
			for _, a := range active {
				if a.end > b.start {
					keep = append(keep, a)
				}
			}
			active = keep
			for _, a := range active {
				if a.token == b.token {
					continue
				}
				end := min(a.end, b.end)
				if end <= b.start {
					continue
				}
				dg := grants[[2]string{a.token, b.token}] || grants[[2]string{b.token, a.token}]
				cause, names := attribute(fs, a.grant.Call, end, slack, []int{a.client, b.client}, dg)
				d := DoubleHolder{Key: key, StaleClient: a.client, NewClient: b.client, StaleToken: a.token,
					NewToken: b.token, Start: b.start, End: end, OverlapMs: float64(end-b.start) / 1e6,
					DoubleGrant: dg, Cause: cause, Faults: names, StaleWrite: "none"}
				for _, w := range a.writes {
					if w.Call < b.start {
						continue
					}
					v, _ := writeVerdict(w, idx)
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
				if t := b.turnedAway; t != nil && t.Call < end+slack {
					d.NewTurnedAway = t.F
					d.NewTurnedAwayReason = t.Reason
				}
				exp.Max = max(exp.Max, d.OverlapMs)
				overlaps = append(overlaps, [2]int64{b.start, end})
				dhs = append(dhs, d)
			}
			active = append(active, b)
		}
		exp.Total += unionMs(overlaps)
	}
	return dhs, sw, exp
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
