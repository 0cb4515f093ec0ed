package checker

import (
	"math"

	"github.com/lockjepsen/lockjepsen/history"
)

// Porcupine keeps a bitset of the whole history per cached state, so its memory
// grows with the square of a partition's length. The lock histories are cut
// into segments at points where the key's state is known, and each segment is
// checked on its own from that state.
//
// A cut follows a successful release R such that every other successful
// operation on the key either returned before R was called or was called after
// R returned: in every linearization R is then the last effect before the cut,
// so the key is free. Operations with unknown outcomes may take effect after the
// cut. Of their effects only two matter later: an unknown acquire or extend
// by token X can make X's own later operations legal, and it can only forbid
// anyone else's. So an unknown op is carried into a later segment when its
// token acts there, and dropped otherwise; dropping it can only make the
// check more lenient, never raise a false alarm.

// segment is a run of one key's operations checked from a known state.
type segment struct {
	ops   []*Op // call order; carried unknown ops first
	init  lockState
	first int // index of the first own op in the key's op list
	last  int // index one past the last
}

// lockCuts returns the positions i after which the key is certainly free.
func lockCuts(ops []*Op) []int {
	var cuts []int
	maxRet := int64(math.MinInt64)
	nextCall := make([]int64, len(ops)+1)
	nextCall[len(ops)] = math.MaxInt64
	for i := len(ops) - 1; i >= 0; i-- {
		nextCall[i] = nextCall[i+1]
		if ops[i].Known() {
			nextCall[i] = ops[i].Call
		}
	}
	for i, o := range ops {
		// A session's end may release nothing (revoke): the key is not
		// known free after it.
		if o.F == history.FRelease && o.Outcome == history.OK && !o.revocation() &&
			maxRet < o.Call && nextCall[i+1] > o.Return {
			cuts = append(cuts, i)
		}
		if o.Known() && o.Return > maxRet {
			maxRet = o.Return
		}
	}
	return cuts
}

// lockSegments groups the key's operations (ok and unknown only, call order)
// into segments of at least chunk operations, cut at known-free points.
func lockSegments(ops []*Op, chunk int) []segment {
	cuts := lockCuts(ops)
	var segs []segment
	from := 0
	for _, c := range cuts {
		if c+1-from >= chunk {
			segs = append(segs, makeSegment(ops, from, c+1))
			from = c + 1
		}
	}
	if from < len(ops) || len(segs) == 0 {
		segs = append(segs, makeSegment(ops, from, len(ops)))
	}
	return segs
}

// makeSegment builds the segment ops[from:to], starting free when from is 0
// or follows a cut, with the unknown ops of earlier segments whose tokens act
// in it.
func makeSegment(ops []*Op, from, to int) segment {
	s := segment{init: lockState{holder: free, now: math.MinInt64}, first: from, last: to}
	if from > 0 {
		acting := make(map[string]bool)
		for _, o := range ops[from:to] {
			if o.Known() {
				acting[o.Token] = true
			}
		}
		for _, o := range ops[:from] {
			if !o.Known() && acting[o.Token] {
				s.ops = append(s.ops, o)
			}
		}
	}
	s.ops = append(s.ops, ops[from:to]...)
	return s
}

// windowSegment picks the ops around [start, end] for a picture: from the last
// cut before start to the first cut after end, trimmed to at most max ops. A
// trimmed window starts from an unknown holder, which is lenient but keeps the
// picture readable.
func windowSegment(ops []*Op, start, end int64, maxOps int) segment {
	cuts := lockCuts(ops)
	from, to := 0, len(ops)
	for _, c := range cuts {
		if ops[c].Return < start {
			from = c + 1
		} else if ops[c].Call > end {
			to = c + 1
			break
		}
	}
	s := makeSegment(ops, from, to)
	if to-from <= maxOps {
		return s
	}
	// Centre the trimmed window on the witness.
	mid := from
	for mid < to && ops[mid].Call < start {
		mid++
	}
	lo := max(from, mid-maxOps/2)
	hi := min(to, lo+maxOps)
	s = makeSegment(ops, lo, hi)
	if lo != from {
		s.init = lockState{holder: anyone, lo: math.MinInt64, hi: never, now: math.MinInt64}
	}
	return s
}
