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

// lostUpdates is the resource's direct check. Every accepted write stores
// read+1, so in a serial history each value is written at most once; two
// accepted writes of one value mean one increment was lost.
func lostUpdates(secs []*Section) [][2]*Section {
	var out [][2]*Section
	first := make(map[int64]*Section)
	for _, s := range secs {
		if s.Effect != effApplied || s.Write == nil {
			continue
		}
		if p, dup := first[s.WriteValue]; dup {
			out = append(out, [2]*Section{p, s})
			continue
		}
		first[s.WriteValue] = s
	}
	return out
}
