package checker

import (
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// fenceIssues finds fence numbers handed to two tokens and numbers lower than
// one already handed out before the grant was even asked for. INCR runs on
// the primary; a failover that loses it hands out the same number again.
func fenceIssues(keyOps map[string][]*Op, keys []string) FenceTokens {
	var ft FenceTokens
	for _, key := range keys {
		// Numbers the resource issued after the grants (f fence) are the ones
		// presented when there are any; the lock's own are then not used.
		var grants, issued []*Op
		for _, o := range keyOps[key] {
			switch {
			case o.Outcome != history.OK || o.Fence == 0:
			case o.F == history.FAcquire:
				grants = append(grants, o)
			case o.F == history.FFence:
				issued = append(issued, o)
			}
		}
		if len(issued) > 0 {
			grants = issued
		}
		first := make(map[int64]*Op)
		for _, g := range grants {
			if p, dup := first[g.Fence]; dup && p.Token != g.Token {
				ft.Duplicates++
				ft.List = append(ft.List, FenceIssue{Kind: "duplicate", Key: key, Fence: g.Fence, Previous: p.Fence,
					Clients: []int{p.Client, g.Client}, Time: g.Return})
			} else if !dup {
				first[g.Fence] = g
			}
		}
		// grants is in call order; walk the same grants in return order to
		// know the highest fence returned before each call.
		byRet := append([]*Op(nil), grants...)
		sort.Slice(byRet, func(i, j int) bool { return byRet[i].Return < byRet[j].Return })
		// One failover that loses INCRs leaves every later grant below the
		// old high-water mark until the counter catches up: that is one
		// regression episode, reported once with the number of grants in it.
		var best *Op
		var episode *FenceIssue
		last := int64(0)
		j := 0
		for _, g := range grants {
			for ; j < len(byRet) && byRet[j].Return < g.Call; j++ {
				if best == nil || byRet[j].Fence > best.Fence {
					best = byRet[j]
				}
			}
			if best == nil || g.Fence >= best.Fence {
				episode = nil
				continue
			}
			if episode != nil && episode.Previous == best.Fence && g.Fence > last {
				episode.GrantsBelow++
				last = g.Fence
				continue
			}
			ft.Regressions++
			ft.List = append(ft.List, FenceIssue{Kind: "regression", Key: key, Fence: g.Fence, Previous: best.Fence,
				Clients: []int{best.Client, g.Client}, Time: g.Return, GrantsBelow: 1})
			episode, last = &ft.List[len(ft.List)-1], g.Fence
		}
	}
	return ft
}
