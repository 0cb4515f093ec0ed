package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
)

// OwnershipResult is what a client was told about its own lock that the
// lock's own terms contradict: not two holders, but one holder misinformed.
// Both kinds come from lock libraries' issue trackers.
type OwnershipResult struct {
	Valid Validity `json:"valid"`
	// ExpiredOnArrival: grants whose reported validity was already over
	// when the acquire returned (validity_ms below 0 on an ok acquire): the
	// application is handed a lock it no longer holds (node-redlock #299).
	ExpiredOnArrival []OwnershipIssue `json:"expired_on_arrival"`
	// Regranted: a second ok acquire of a key by the token that already
	// held it, returned while the first lease was certainly alive, with no
	// ok release between: a retried acquire counted twice, so one release
	// no longer frees the lock (Redisson #7367's hold count of 2).
	Regranted []OwnershipIssue `json:"regranted"`
	// Orphaned: the spans in which a key turned contenders away while no
	// client believed it held it (orphaned.go). A measure, not a verdict:
	// they leave Valid as it is.
	Orphaned []OrphanedSpan `json:"orphaned"`
}

// OwnershipIssue is one misinformed grant.
type OwnershipIssue struct {
	Key    string  `json:"key"`
	Client int     `json:"client"`
	Token  string  `json:"token"`
	Time   int64   `json:"time"` // the acquire's return
	TimeS  float64 `json:"time_s"`
	Detail string  `json:"detail"`
}

// ownership scans one group's ops (any order) for misinformed grants.
func ownership(ops []Op, t0 int64) (expired, regranted []OwnershipIssue) {
	type grantKey struct{ key, token string }
	var mine []*Op
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case history.FAcquire, history.FExtend, history.FRelease:
			if o.Outcome == history.OK {
				mine = append(mine, o)
			}
		}
	}
	slices.SortStableFunc(mine, func(a, b *Op) int { return cmp.Compare(a.Return, b.Return) })
	// leaseEnd: the end of the token's lease on the key that is certain
	// (an ok acquire's or extend's call + TTL: the server's lease began
	// after the call), 0 after an ok release.
	leaseEnd := map[grantKey]int64{}
	for _, o := range mine {
		k := grantKey{o.Key, o.Token}
		switch o.F {
		case history.FAcquire:
			if o.Validity < 0 {
				expired = append(expired, OwnershipIssue{Key: o.Key, Client: o.Client, Token: o.Token, Time: o.Return, TimeS: rel(o.Return, t0),
					Detail: fmt.Sprintf("client %d was granted %s with a validity of %d ms: the lease was over before the acquire returned", o.Client, o.Key, o.Validity/1e6)})
			}
			if end := leaseEnd[k]; end > 0 && o.Return <= end {
				regranted = append(regranted, OwnershipIssue{Key: o.Key, Client: o.Client, Token: o.Token, Time: o.Return, TimeS: rel(o.Return, t0),
					Detail: fmt.Sprintf("client %d was granted %s again under the token it already held, %.0f ms before that lease could have run out, with no release between: one release no longer frees it", o.Client, o.Key, float64(end-o.Return)/1e6)})
			}
			leaseEnd[k] = max(leaseEnd[k], o.Call+o.TTL)
		case history.FExtend:
			if leaseEnd[k] > 0 {
				leaseEnd[k] = max(leaseEnd[k], o.Call+o.TTL)
			}
		case history.FRelease:
			delete(leaseEnd, k)
		}
	}
	return expired, regranted
}
