package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/history"
)

// The lock model is a single correct lease-lock server with a perfect clock.
// Its state is the holder's token and bounds on when the holder's lease
// expires, [lo, hi]. It also carries now, the earliest time at which the last
// linearized operation can have taken effect: linearization points are
// ordered, so an operation placed after another cannot take effect before it.
// Without now, an unknown acquire (which returns at +inf) could be placed
// between two grants and "explain" a double grant that no single server could
// have made.
//
// Unknown outcomes make the model nondeterministic; porcupine's state is the
// set of states the server may be in, with dominated states pruned (a state
// that is freer in every respect allows everything the other allows).

// free is the holder of a key nobody holds; anyone marks a segment's start
// when nothing about the holder is known.
const (
	free   = ""
	anyone = "\x00any"
)

type lockState struct {
	holder string
	lo, hi int64
	now    int64
}

type lockStates []lockState

// lockInput is what porcupine sees of one operation. Failed operations never
// reach the model: a fail proves nothing happened, and a refusal cannot break
// mutual exclusion (a refused acquire may also be NOREPLICAS or a WAIT
// shortfall, not evidence of a holder).
type lockInput struct {
	op  *Op
	eps int64
}

func (s lockState) dominates(t lockState) bool {
	return s.holder == t.holder && s.lo <= t.lo && s.hi >= t.hi && s.now <= t.now
}

// apply is the effect of op taking place on s, if a correct server could do it.
func (s lockState) apply(o *Op, eps int64) (lockState, bool) {
	t := max(s.now, o.Call)
	switch o.F {
	case history.FAcquire:
		if s.holder != free && s.holder != anyone {
			t = max(t, s.lo) // the holder's lease must be able to have expired
		}
		if t > o.Return {
			return s, false
		}
		return lockState{holder: o.Token, lo: t + o.Lease() - eps, hi: leaseHi(o, eps), now: t}, true
	case history.FRelease:
		if o.revocation() {
			// The server ended a session: it releases what the session
			// holds then, if anything, and cannot fail.
			if t > o.Return {
				return s, false
			}
			if s.holder == anyone || slices.Contains(o.notes.session.tokens, s.holder) {
				return lockState{holder: free, now: t}, true
			}
			s.now = t
			return s, true
		}
		fallthrough
	case history.FExtend:
		if s.holder != o.Token && s.holder != anyone {
			return s, false
		}
		if t > o.Return || t > s.hi {
			return s, false
		}
		if o.F == history.FRelease {
			return lockState{holder: free, now: t}, true
		}
		return lockState{holder: o.Token, lo: t + o.Lease() - eps, hi: leaseHi(o, eps), now: t}, true
	}
	return s, true
}

// leaseHi is the latest the server can have expired o's lease: its TTL
// after the reply, or never for a server that never expires a lock. Such a
// lock still counts as free after the client's lease (lo): the model stays
// as lenient on grants as for a TTL, but an unlock after the client's lease
// ran out, which such a server answers ok, is not read as a violation.
func leaseHi(o *Op, eps int64) int64 {
	if o.NoExpiry() {
		return never
	}
	return satAdd(o.Return, o.TTL+eps)
}

func lockStep(state, input, _ any) (bool, any) {
	ss := state.(lockStates)
	in := input.(*lockInput)
	out := make(lockStates, 0, len(ss)+1)
	for _, s := range ss {
		if !in.op.Known() {
			out = append(out, s) // the unknown op did not take effect
		}
		if n, ok := s.apply(in.op, in.eps); ok {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return false, nil
	}
	return true, pruneLock(out)
}

// pruneLock drops dominated states and sorts the rest, so that equal sets
// compare equal.
func pruneLock(ss lockStates) lockStates {
	if len(ss) == 1 {
		return ss
	}
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if a.holder != b.holder {
			return a.holder < b.holder
		}
		if a.now != b.now {
			return a.now < b.now
		}
		if a.lo != b.lo {
			return a.lo < b.lo
		}
		return a.hi > b.hi
	})
	out := ss[:0]
	for _, s := range ss {
		dominated := false
		for _, k := range out {
			if k.dominates(s) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, s)
		}
	}
	return out
}

func lockEqual(a, b any) bool { return slices.Equal(a.(lockStates), b.(lockStates)) }

func lockHash(a any) uint64 {
	h := fnvOffset
	for _, s := range a.(lockStates) {
		for i := 0; i < len(s.holder); i++ {
			h = fnvMix(h, uint64(s.holder[i]))
		}
		h = fnvMix(fnvMix(fnvMix(h, uint64(s.lo)), uint64(s.hi)), uint64(s.now))
	}
	return h
}

// FNV-1a, for porcupine's state hashes.
const fnvOffset = uint64(14695981039346656037)

func fnvMix(h, v uint64) uint64 { return (h ^ v) * 1099511628211 }

// lockModel builds the porcupine model; t0 makes times in pictures relative.
func lockModel(t0 int64) porcupine.Model {
	return porcupine.Model{
		Init:  func() any { return lockStates{{holder: free, now: math.MinInt64}} },
		Step:  lockStep,
		Equal: lockEqual,
		Hash:  lockHash,
		DescribeOperation: func(input, _ any) string {
			return describeLockOp(input.(*lockInput).op, t0)
		},
		DescribeState: func(state any) string {
			return describeLockStates(state.(lockStates), t0)
		},
	}
}

func describeLockOp(o *Op, t0 int64) string {
	tok := ShortToken(o.Token)
	out := string(o.Outcome)
	switch o.F {
	case history.FAcquire:
		if o.Fence != 0 {
			return fmt.Sprintf("acquire(%s, %dms) → %s fence %d", tok, o.TTL/1e6, out, o.Fence)
		}
		return fmt.Sprintf("acquire(%s, %dms) → %s", tok, o.TTL/1e6, out)
	case history.FExtend:
		return fmt.Sprintf("extend(%s, %dms) → %s", tok, o.TTL/1e6, out)
	}
	return fmt.Sprintf("%s(%s) → %s", o.F, tok, out)
}

func describeLockStates(ss lockStates, t0 int64) string {
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		switch s.holder {
		case free:
			parts = append(parts, "free")
		case anyone:
			parts = append(parts, "unknown holder")
		default:
			hi := "∞"
			if s.hi != never {
				hi = fmt.Sprintf("%.3fs", rel(s.hi, t0))
			}
			parts = append(parts, fmt.Sprintf("held by %s, expires in [%.3fs, %s]", ShortToken(s.holder), rel(s.lo, t0), hi))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of: " + strings.Join(parts, " | ")
}

// ShortToken is a token as people read it: its first 8 characters.
func ShortToken(t string) string {
	if len(t) > 8 {
		return t[:8]
	}
	return t
}

// rel converts a true time to seconds since t0.
func rel(t, t0 int64) float64 { return float64(t-t0) / 1e9 }
