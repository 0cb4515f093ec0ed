package checker

import (
	"cmp"
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
	// ValidityMs is an expired-on-arrival grant's reported validity (below
	// 0); LeftMs, for a regrant, how long the lease it repeats still
	// certainly had to run.
	ValidityMs int64   `json:"validity_ms,omitempty"`
	LeftMs     float64 `json:"left_ms,omitempty"`
	// Detail is written by the report (report.Explain).
	Detail string `json:"detail"`
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
					ValidityMs: o.Validity / 1e6})
			}
			if end := leaseEnd[k]; end > 0 && o.Return <= end {
				regranted = append(regranted, OwnershipIssue{Key: o.Key, Client: o.Client, Token: o.Token, Time: o.Return, TimeS: rel(o.Return, t0),
					LeftMs: float64(end-o.Return) / 1e6})
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
