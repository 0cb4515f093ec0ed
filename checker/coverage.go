package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// heldSpan is one grant's certain holding interval, all a window's coverage
// needs of it.
type heldSpan struct {
	start, end int64
	client     int
}

func heldSpans(ts []*tenure) []heldSpan {
	out := make([]heldSpan, len(ts))
	for i, t := range ts {
		out[i] = heldSpan{t.start, t.end, t.grant.Client}
	}
	return out
}

// FaultCoverage says, for one fault event, how many of its windows reached
// the fault's dangerous moment: a valid verdict over windows that reached none
// proves nothing about that fault (a cut with no grant on the primary alone,
// a pause of a client that held nothing).
type FaultCoverage struct {
	Fault   string `json:"fault"`
	Moment  string `json:"moment"` // marks.MomentHeld or marks.MomentGrant
	Windows int    `json:"windows"`
	Reached int    `json:"reached"`
}

// repliedSpans are the ops a reply fault reached in flight (Op.Reply).
func repliedSpans(ops []Op) []heldSpan {
	var out []heldSpan
	for i := range ops {
		if ops[i].Reply() != "" {
			out = append(out, heldSpan{ops[i].Call, ops[i].Done, ops[i].Client})
		}
	}
	return out
}

// coverage marks each window that reached its fault's moment and tallies
// them by fault, in the order the faults first fired. replied are the ops
// a reply fault reached (MomentReply's windows).
func coverage(ws []FaultWindow, fs []fault, held, replied []heldSpan) []FaultCoverage {
	sort.Slice(held, func(i, j int) bool { return held[i].start < held[j].start })
	out := []FaultCoverage{}
	at := map[string]int{}
	wi := 0
	for _, f := range fs {
		if f.f == history.NFailover || wi >= len(ws) {
			continue // a failover observation has no window (faultWindows)
		}
		w := &ws[wi]
		wi++
		w.Moment = f.moment
		switch w.Moment {
		case marks.MomentGrant:
			w.Reached = w.Grants > 0
		case marks.MomentReply:
			// The fault's client's operation that overlaps the window: the
			// fault is armed just before its start is logged, and taken by
			// the client's next call.
			for _, r := range replied {
				if r.client == f.client && r.end >= f.start && (f.end == never || r.start <= f.end) {
					w.Reached = true
					break
				}
			}
		default:
			for _, h := range held {
				if h.start > f.start {
					break
				}
				// At f.start, not only after it: a lease the fault itself
				// ended (a Revokes mark) ends exactly as the fault begins.
				if h.end >= f.start && (f.client < 0 || h.client == f.client) {
					w.Reached = true
					break
				}
			}
		}
		i, ok := at[f.f]
		if !ok {
			i = len(out)
			at[f.f] = i
			out = append(out, FaultCoverage{Fault: f.f, Moment: w.Moment})
		}
		out[i].Windows++
		if w.Reached {
			out[i].Reached++
		}
	}
	return out
}

// notExercised names the faults none of whose windows reached the moment.
func notExercised(cs []FaultCoverage) string {
	var parts []string
	for _, c := range cs {
		if c.Reached == 0 {
			parts = append(parts, fmt.Sprintf("%s (0 of %d windows had %s)", c.Fault, c.Windows, marks.MomentWords(c.Moment)))
		}
	}
	return strings.Join(parts, ", ")
}
