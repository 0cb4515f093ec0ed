package checker

import (
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Never is an unknown outcome's Return, and an Evictions time not logged.
const Never = never

// Facts are what shows a violation, as data: the report writes each
// violation's explanation from them (report.Explain), so the checker writes
// no sentence. Not part of results.json; the explanation written from them is.
type Facts struct {
	// Holder is the lease that certainly held the lock: a lock witness's
	// first holder.
	Holder *Lease
	// Op is the offending grant, release or extend; for lease-lost the reply
	// that said the token no longer held the lock; for lock-not-linearizable
	// the first reply no server could give (nil when none was singled out).
	Op *Op
	// Told is, for a double grant made after the first holder was told it no
	// longer held the lock, that reply; Regrant is, for lease-lost, the
	// first grant under another token after it.
	Told, Regrant *Op
	// UnknownGrant: a release's or extend's own acquire had ended with an
	// unknown outcome before it, so the server may have granted it too.
	UnknownGrant bool
	// From and To bound the span porcupine found no placement for
	// (lock-not-linearizable, resource-not-linearizable).
	From, To int64
	// Sections are lost-update's two sections; rewind's stale write, then
	// the current one; resource-not-linearizable's first section that does
	// not fit (none when porcupine singled none out).
	Sections []*Section
	// Evictions is what the node logged of the key's evictions around the
	// loss, when the cause named is eviction.
	Evictions *Evictions
	// One of these for the findings with a record of their own.
	Double    *DoubleHolder
	Fence     *FenceIssue
	Stuck     *StuckLock
	Ownership *OwnershipIssue
}

// Lease is a holder's grant, and the span its lease was certainly alive.
type Lease struct {
	Client      int
	Token       string
	Call, Grant int64 // its acquire's call and reply
	Start, End  int64
}

func leaseOf(t *tenure) *Lease {
	return &Lease{Client: t.grant.Client, Token: t.token, Call: t.grant.Call, Grant: t.grant.Return, Start: t.start, End: t.end}
}

// Evictions are the node's logs of one lock key's evictions
// (history.NEvicted) around a loss that ran from the first holder's acquire
// (sent at Call, granted at Grant) to At, the second grant or the reply that
// ended the first lease.
type Evictions struct {
	Key             string
	Call, Grant, At int64
	// Within are the evictions logged between Grant and At: the plain case.
	Within []int64
	// Early is the last logged after Call and before Grant; Late the first
	// logged after At within the log's lag (the node logs an eviction a
	// moment after it); Never when none.
	Early, Late int64
}

// evictions are the times the nemesis logged each lock key evicted
// (history.NEvicted), per key in time order, and lag, how late such a log
// may come after the eviction (attribute's slack for point events).
type evictions struct {
	at  map[string][]int64
	lag int64
}

func evictionsOf(nem []history.Event, lag int64) evictions {
	ev := evictions{at: make(map[string][]int64), lag: lag}
	for _, e := range nem {
		if e.F == history.NEvicted && e.Key != "" {
			ev.at[e.Key] = append(ev.at[e.Key], e.Time)
		}
	}
	for _, ts := range ev.at {
		slices.Sort(ts)
	}
	return ev
}

// seen is what the node logged of key's evictions around a loss from call
// (granted at grant) to at. A violation blamed on eviction is only said to
// follow an eviction the node logged for its key within that span: one
// logged after the first acquire was sent (the key was set by then) and at
// most lag after the far end.
func (ev evictions) seen(cause, key string, call, grant, at int64) *Evictions {
	if cause != marks.CauseEviction {
		return nil
	}
	s := &Evictions{Key: key, Call: call, Grant: grant, At: at, Early: never, Late: never}
	for _, t := range ev.at[key] {
		switch {
		case t >= grant && t <= at:
			s.Within = append(s.Within, t)
		case t >= call && t < grant:
			s.Early = t
		case t > at && t <= at+ev.lag && s.Late == never:
			s.Late = t
		}
	}
	return s
}
