package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The resource model is a register the critical sections increment. Under
// mutual exclusion the sections serialise: each reads the value the previous
// accepted write left and, if its write is accepted, leaves value+1. Two
// sections that read the same v and both had v+1 accepted cannot be ordered:
// a lost update. A rejected write changes nothing. The resource's fence check
// is not modelled here; its decisions are taken as given (the log says what
// was accepted) and judged by their effect on the value.
//
// A segment may start without knowing the value; the first section then
// supplies it.

type resState struct {
	known bool
	v     int64
}

type resStates []resState

func (s resState) apply(sec *Section) (after resState, ok bool) {
	if sec.Read != nil {
		if s.known && s.v != sec.ReadValue {
			return s, false
		}
		s = resState{true, sec.ReadValue}
	}
	if sec.Effect == effApplied {
		return resState{true, sec.WriteValue}, true
	}
	return s, true
}

func resStep(state, input, _ any) (bool, any) {
	ss := state.(resStates)
	sec := input.(*Section)
	out := make(resStates, 0, len(ss)+1)
	for _, s := range ss {
		n, ok := s.apply(sec)
		if !ok {
			continue
		}
		out = append(out, n)
		if sec.Effect == effUnknown {
			out = append(out, resState{true, sec.WriteValue})
		}
	}
	if len(out) == 0 {
		return false, nil
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].known != out[j].known {
			return !out[i].known
		}
		return out[i].v < out[j].v
	})
	// An unknown value allows everything a known one does.
	if !out[0].known {
		return true, out[:1]
	}
	k := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[k-1] {
			out[k] = out[i]
			k++
		}
	}
	return true, out[:k]
}

func resEqual(a, b any) bool { return slices.Equal(a.(resStates), b.(resStates)) }

func resHash(a any) uint64 {
	h := fnvOffset
	for _, s := range a.(resStates) {
		if s.known {
			h = fnvMix(h, uint64(s.v))
		} else {
			h = fnvMix(h, 0xabcdef)
		}
	}
	return h
}

func resourceModel() porcupine.Model {
	return porcupine.Model{
		Init:  func() any { return resStates{{}} },
		Step:  resStep,
		Equal: resEqual,
		Hash:  resHash,
		DescribeOperation: func(input, _ any) string {
			s := input.(*Section)
			var b strings.Builder
			if s.Read != nil {
				fmt.Fprintf(&b, "read %d", s.ReadValue)
			}
			if s.Write != nil {
				if b.Len() > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "write %d fence %d → %s", s.WriteValue, s.Fence, s.Effect)
			}
			return b.String()
		},
		DescribeState: func(state any) string {
			parts := []string{}
			for _, s := range state.(resStates) {
				if s.known {
					parts = append(parts, fmt.Sprint(s.v))
				} else {
					parts = append(parts, "?")
				}
			}
			return "value " + strings.Join(parts, " or ")
		},
	}
}

// resourceSegments cuts a row's sections where no definite section is in
// flight. Each segment starts from an unknown value, so a cut never causes a
// false alarm; a lost update needs two overlapping sections and so never
// straddles a cut. Sections with unknown writes are left in the segment of
// their call: dropping one later only makes the check more lenient.
func resourceSegments(secs []*Section, chunk int) [][]*Section {
	var out [][]*Section
	from := 0
	maxRet := int64(math.MinInt64)
	for i, s := range secs {
		if i > from && i-from >= chunk && maxRet < s.Call {
			out = append(out, secs[from:i])
			from = i
		}
		if s.Effect != effUnknown && s.Return > maxRet {
			maxRet = s.Return
		}
	}
	if from < len(secs) {
		out = append(out, secs[from:])
	}
	return out
}

// lostUpdates is the resource's first direct check: two accepted sections,
// under two grants, that read the same value v and both had v+1 accepted,
// each having read before the other's write took effect. Neither can be
// ordered before the other, so one increment was lost: both acted as holder
// at once. Accepted writes of one value are not a pair otherwise: after a
// stale write set the value back, the holders that followed, one at a time,
// read values that had been read before and wrote values that had been
// written before. That is a rewind (rewinds), counted once at the write that
// caused it; a read that may have come after the other's write (its reply
// came later) may have read the rewound value, so it pairs with nothing.
// secs are in call order.
func lostUpdates(secs []*Section) [][2]*Section {
	var out [][2]*Section
	byRead := make(map[int64][]*Section) // read value → accepted sections that read it
	for _, s := range secs {
		if s.Effect != effApplied || s.Write == nil || s.Read == nil {
			continue
		}
		for _, p := range byRead[s.ReadValue] {
			// One slot runs one section at a time, and a client's own
			// earlier section is not a second holder.
			if p.WriteValue == s.WriteValue && p.Client != s.Client && p.Token != s.Token &&
				readBefore(s, p) && readBefore(p, s) {
				out = append(out, [2]*Section{p, s})
				break
			}
		}
		byRead[s.ReadValue] = append(byRead[s.ReadValue], s)
	}
	return out
}

// readBefore reports whether a's read certainly happened before b's write
// took effect: its reply came before the resource applied b's write (the
// log's time), or, without the log, before b's write was sent.
func readBefore(a, b *Section) bool {
	took := b.Write.Call
	if b.AppliedByLog {
		took = b.Applied
	}
	return a.Read.Return != never && a.Read.Return < took
}

// rewind is an accepted write that set the counter below the value the
// resource already held: stale is the write, current the accepted write whose
// value it replaced.
type rewind struct {
	stale, current *Section
}

// rewinds is the resource's second direct check. Every accepted write stores
// read+1, so in a serial history the accepted values only grow: a write
// accepted with a value below the value the resource held is impossible.
// Only the write that moved the value back counts; the holders after it read
// its value and went on from there, each above it.
//
// The value it replaced is the one the resource held when it applied the
// write. With the resource log (every accepted write's time as the resource
// decided it, the case in every run) that is the resource's own order: the
// accepted writes sorted by that time, each compared with the one before. A
// history without the log knows only when each write returned, which can come
// long after it was applied (a slow reply), so it compares a write only with
// writes that had returned before it was sent, the latest of them: it may
// miss a rewind but never invents one.
func rewinds(secs []*Section) []rewind {
	var applied []*Section
	exact := true
	for _, s := range secs {
		if s.Effect == effApplied && s.Write != nil && s.Return != never {
			applied = append(applied, s)
			exact = exact && s.AppliedByLog
		}
	}
	var out []rewind
	if exact {
		sort.SliceStable(applied, func(i, j int) bool { return applied[i].Applied < applied[j].Applied })
		for i := 1; i < len(applied); i++ {
			if w, cur := applied[i], applied[i-1]; w.WriteValue < cur.WriteValue {
				out = append(out, rewind{stale: w, current: cur})
			}
		}
	} else {
		out = rewindsByReturn(applied)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].stale.Call < out[j].stale.Call })
	return out
}

// rewindsByReturn is rewinds without the resource log: each accepted write
// against the latest of those that had returned before it was sent.
func rewindsByReturn(applied []*Section) []rewind {
	var out []rewind
	done := slices.Clone(applied)
	sort.SliceStable(done, func(i, j int) bool { return done[i].Return < done[j].Return })
	sent := slices.Clone(applied)
	sort.SliceStable(sent, func(i, j int) bool { return sent[i].Write.Call < sent[j].Write.Call })
	var cur *Section
	next := 0
	for _, w := range sent {
		for next < len(done) && done[next].Return < w.Write.Call {
			if d := done[next]; cur == nil || d.Return > cur.Return {
				cur = d
			}
			next++
		}
		if cur != nil && w.WriteValue < cur.WriteValue {
			out = append(out, rewind{stale: w, current: cur})
		}
	}
	return out
}
