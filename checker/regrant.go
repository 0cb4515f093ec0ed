package checker

import (
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// keyGrants is what a window's regrant time needs of one key: when clients
// asked for it and when they were granted it (both sorted).
type keyGrants struct {
	calls   []int64 // acquires' calls
	granted []int64 // ok acquires' returns
}

func grantsOf(ops []*Op) keyGrants {
	var g keyGrants
	for _, o := range ops {
		if o.F != history.FAcquire {
			continue
		}
		g.calls = append(g.calls, o.Call)
		if o.Outcome == history.OK && o.Return != never {
			g.granted = append(g.granted, o.Return)
		}
	}
	sort.Slice(g.calls, func(i, j int) bool { return g.calls[i] < g.calls[j] })
	sort.Slice(g.granted, func(i, j int) bool { return g.granted[i] < g.granted[j] })
	return g
}

// regrant sets each window's RegrantMs: the time from its fault's start until
// every key a client asked for after that start had been granted again. A
// stuck lock never comes back; a failover's outage, a dead holder's TTL or a
// refused-while-full cache each show as the time the lock service was lost to
// the clients that wanted it, which a safety verdict does not say. -1: some
// key asked for was not granted again before the history ended.
func regrant(ws []FaultWindow, keys []keyGrants, t0 int64) {
	for i := range ws {
		start := t0 + int64(ws[i].StartS*1e9)
		worst := int64(0)
		for _, k := range keys {
			// Asked for after the start: the key matters to this window.
			if j := sort.Search(len(k.calls), func(j int) bool { return k.calls[j] >= start }); j == len(k.calls) {
				continue
			}
			j := sort.Search(len(k.granted), func(j int) bool { return k.granted[j] >= start })
			if j == len(k.granted) {
				worst = -1
				break
			}
			worst = max(worst, k.granted[j]-start)
		}
		v := -1.0
		if worst >= 0 {
			v = float64(worst) / 1e6
		}
		ws[i].RegrantMs = &v
	}
}
