package checker

import (
	"slices"
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// Section is one critical section: a read of the resource's value and the
// write of value+1 that follows it from the same client under the same token.
// porcupine treats it as one operation from the read's call to the write's
// return.
type Section struct {
	Key    string
	Token  string
	Client int
	Fence  int64
	Read   *Op // nil for a write without a successful read before it
	Write  *Op // nil for a read the client did not follow with a write
	Call   int64
	Return int64 // never when the write's outcome is unknown

	ReadValue  int64
	WriteValue int64
	// Applied is when an accepted write took effect: the resource log's
	// time when it has one (AppliedByLog), else the write's return.
	Applied      int64
	AppliedByLog bool
	// Effect: applied (the write was accepted), none (rejected, failed, or no
	// write), unknown (the write's fate is unknown even to the resource log).
	Effect string
}

// Effects of a section on the resource.
const (
	effApplied = "applied"
	effNone    = "none"
	effUnknown = "unknown"
)

// AttemptIndex looks up the resource's own record of a write, which settles
// the verdict of a write whose reply the client never saw. It keeps only
// that (verdict and time, per token and value), not the log's lines: a
// resource log is read line by line into it (IndexAttemptsFile).
type AttemptIndex struct {
	m map[attemptKey]attemptVerdict
}

type attemptKey struct {
	token string
	value int64
}

type attemptVerdict struct {
	time    int64
	verdict string
}

// NewAttemptIndex is an empty index.
func NewAttemptIndex() *AttemptIndex { return &AttemptIndex{m: make(map[attemptKey]attemptVerdict)} }

// Add takes one line of the resource log; only writes are kept.
func (idx *AttemptIndex) Add(a *history.Attempt) {
	if a.Op != history.FWrite {
		return
	}
	k := attemptKey{a.Token, a.Value}
	if prev, ok := idx.m[k]; ok && prev.verdict == history.Accepted {
		return // a retried write counts as accepted if any try was
	}
	v := a.Verdict
	switch v { // share the constants rather than each line's copy
	case history.Accepted:
		v = history.Accepted
	case history.Rejected:
		v = history.Rejected
	}
	idx.m[k] = attemptVerdict{time: a.Time, verdict: v}
}

// writeVerdict is the resource's verdict on a write: accepted, rejected, or ""
// when nobody knows, with when it was decided and whether the resource log
// said so. The resource log wins over the client's view because the resource
// decided; its time is when the write took effect, where a reply only bounds it.
// A line inside a known write of the same token and value (between its
// call and its return) is that write's, not an unknown one's: a holder
// whose write's reply was lost reads the old value again and writes the
// same value under the same token, and its lost write may never have
// reached the resource at all.
func writeVerdict(w *Op, idx *AttemptIndex, known map[attemptKey][]*Op) (verdict string, decided int64, byLog bool) {
	if w.Value != nil && idx != nil {
		k := attemptKey{w.Token, *w.Value}
		if a, ok := idx.m[k]; ok && a.time >= w.Call {
			if w.Known() || !slices.ContainsFunc(known[k], func(o *Op) bool { return o.Call <= a.time && a.time <= o.Return }) {
				return a.verdict, a.time, true
			}
		}
	}
	switch {
	case w.Outcome == history.OK:
		return history.Accepted, w.Return, false
	case w.Outcome == history.Fail:
		// A fail without a verdict never reached the resource: as good as rejected.
		return history.Rejected, w.Return, false
	}
	return "", never, false
}

// buildSections pairs reads with writes per client slot.
func buildSections(ops []Op, idx *AttemptIndex) []*Section {
	var out []*Section
	pending := make(map[int]*Op) // client → successful read awaiting its write
	flush := func(c int) {
		if r := pending[c]; r != nil {
			out = append(out, &Section{Key: r.Key, Token: r.Token, Client: c, Fence: r.Fence, Read: r,
				Call: r.Call, Return: r.Return, ReadValue: *r.Value, Effect: effNone})
			delete(pending, c)
		}
	}
	order := make([]*Op, 0, len(ops))
	for i := range ops {
		if ops[i].F == history.FRead || ops[i].F == history.FWrite {
			order = append(order, &ops[i])
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].Call < order[j].Call })
	known := make(map[attemptKey][]*Op)
	for _, o := range order {
		if o.F == history.FWrite && o.Value != nil && o.Known() {
			k := attemptKey{o.Token, *o.Value}
			known[k] = append(known[k], o)
		}
	}
	for _, o := range order {
		if o.F == history.FRead {
			flush(o.Client)
			// A rejected or unknown read observed nothing the model can use.
			if o.Outcome == history.OK && o.Verdict() != history.Rejected && o.Value != nil {
				pending[o.Client] = o
			}
			continue
		}
		if o.Value == nil {
			flush(o.Client)
			continue
		}
		r := pending[o.Client]
		if r != nil && r.Token != o.Token {
			flush(o.Client)
			r = nil
		}
		delete(pending, o.Client)
		s := &Section{Key: o.Key, Token: o.Token, Client: o.Client, Fence: o.Fence, Read: r, Write: o,
			Call: o.Call, WriteValue: *o.Value}
		if r != nil {
			s.Call, s.ReadValue = r.Call, *r.Value
		}
		v, decided, byLog := writeVerdict(o, idx, known)
		switch v {
		case history.Accepted:
			s.Effect, s.Return = effApplied, max(decided, s.Call)
		case history.Rejected:
			s.Effect, s.Return = effNone, max(decided, s.Call)
			if o.Outcome == history.OK || o.Outcome == history.Fail {
				s.Return = o.Return
			}
		default:
			s.Effect, s.Return = effUnknown, never
		}
		if s.Effect == effApplied {
			s.Applied, s.AppliedByLog = decided, byLog
			if o.Known() {
				s.Return = o.Return
				if decided > o.Return {
					s.Applied = o.Return
				}
			}
		}
		out = append(out, s)
	}
	for c := range pending {
		flush(c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}
