// Package report draws a run: the timeline plot (who held which lock when,
// the nemesis's faults, the violations) and index.html tying the run together.
package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Timeline is what the plot shows, computed from the history and the verdicts.
type Timeline struct {
	Start   int64 // true time of the first event; the x axis counts seconds from it
	Clients int
	Holds   []Hold
	Faults  []Band
	Writes  []Mark
	Doubles []Band // double holders: two clients acted as holder at once
}

// Hold is a client acting as a lock holder, from its acquire's ok to its
// release (or the server's "not held", or the end of the history).
type Hold struct {
	Client     int
	Key        string
	Token      string
	Fence      int64 // 0: no fence number
	From, To   int64
	KeyIndex   int
	Invalid    bool // part of a double grant
	Incomplete bool // never released: ran to the end of the history
	// Double is what the hold was in a double holder: "older" (the first
	// holder, still under its lease) or "newer" (granted during the older
	// one's tenure); With is the other client.
	Double string
	With   int
}

// Band is a shaded interval.
type Band struct {
	From, To int64
	Label    string
	Client   int // double holders: the stale client
	New      int // double holders: the newer client
}

// Mark is a read or write at the resource; consecutive refusals of one hold's
// reads (or writes) are one mark with a Count, from Time to Until.
type Mark struct {
	Client  int
	Op      string // read | write
	Time    int64
	Until   int64
	Count   int
	Token   string
	Fence   int64
	Verdict string // accepted | rejected | unknown
	Reason  string // the resource's refusal
	Stale   bool
}

// BuildTimeline reduces a history to what the plot draws: the holds, the
// resource's marks and the fault bands in one pass over the events, then the
// checker's double holders laid over the holds.
func BuildTimeline(events []history.Event, res *checker.Result, cat *marks.Catalog) Timeline {
	if len(events) == 0 {
		return Timeline{}
	}
	b := &timelineBuilder{cat: cat, keyIdx: map[string]int{}, holding: map[int]*openHold{},
		invoked: map[history.Process]history.Event{}, openFaults: map[string]history.Event{}, lastRefusal: map[int]int{}}
	b.tl.Start = events[0].Time
	end := events[len(events)-1].Time
	for _, e := range events {
		if e.IsClient() {
			b.client(e)
		} else {
			b.fault(e)
		}
	}
	b.closeAll(end)
	if res != nil {
		b.overlayDoubles(res.DoubleHolderList, events[0].Time, end)
	}
	sort.SliceStable(b.tl.Holds, func(i, j int) bool { return b.tl.Holds[i].From < b.tl.Holds[j].From })
	return b.tl
}

// openHold is a grant whose hold has not ended yet.
type openHold struct {
	key, token string
	fence      int64
	from       int64
}

// timelineBuilder is BuildTimeline's state during its pass over the events.
type timelineBuilder struct {
	tl          Timeline
	cat         *marks.Catalog
	keyIdx      map[string]int
	holding     map[int]*openHold                 // client -> its hold
	invoked     map[history.Process]history.Event // process -> its call in flight
	openFaults  map[string]history.Event          // event@node -> the fault's start
	lastRefusal map[int]int                       // client -> index in tl.Writes of its last refusal mark
}

func (b *timelineBuilder) closeHold(c int, at int64, incomplete bool) {
	if h := b.holding[c]; h != nil {
		b.tl.Holds = append(b.tl.Holds, Hold{Client: c, Key: h.key, Token: h.token, Fence: h.fence, From: h.from, To: at, KeyIndex: b.keyIdx[h.key], Incomplete: incomplete})
		delete(b.holding, c)
	}
}

// addMark adds a resource mark; a refusal of the same hold's same operation
// right after another extends that one's mark.
func (b *timelineBuilder) addMark(m Mark) {
	if m.Verdict == history.Rejected {
		if i, ok := b.lastRefusal[m.Client]; ok {
			p := &b.tl.Writes[i]
			if p.Token == m.Token && p.Op == m.Op && p.Verdict == m.Verdict {
				p.Until = m.Time
				p.Count++
				return
			}
		}
		b.lastRefusal[m.Client] = len(b.tl.Writes)
	} else {
		delete(b.lastRefusal, m.Client)
	}
	m.Until, m.Count = m.Time, 1
	b.tl.Writes = append(b.tl.Writes, m)
}

// fault opens a fault's band at its event and closes it at its heal; a
// failover is a band of no width.
func (b *timelineBuilder) fault(e history.Event) {
	if _, ok := b.cat.Of(e.F); ok {
		b.openFaults[e.F+"@"+e.Node] = e
		return
	}
	for _, m := range b.cat.All() {
		if m.Heal == e.F {
			if st, ok := b.openFaults[m.Event+"@"+e.Node]; ok {
				b.tl.Faults = append(b.tl.Faults, Band{From: st.Time, To: e.Time, Label: m.Event + " " + st.Node})
				delete(b.openFaults, m.Event+"@"+e.Node)
			}
		}
	}
	if e.F == history.NFailover {
		b.tl.Faults = append(b.tl.Faults, Band{From: e.Time, To: e.Time, Label: "failover to " + e.Node})
	}
}

// client follows one client event: a grant opens a hold, the next acquire
// or release (or the server's "not held") closes it, and the resource's
// reads and writes become marks.
func (b *timelineBuilder) client(e history.Event) {
	if e.Client+1 > b.tl.Clients {
		b.tl.Clients = e.Client + 1
	}
	if e.Type == history.Invoke {
		b.invoked[e.Process] = e
		if e.F == history.FRelease || e.F == history.FAcquire {
			b.closeHold(e.Client, e.Time, false)
		}
		return
	}
	inv := b.invoked[e.Process]
	switch {
	case e.F == history.FAcquire && e.Type == history.OK:
		if _, ok := b.keyIdx[inv.Key]; !ok {
			b.keyIdx[inv.Key] = len(b.keyIdx)
		}
		tok := e.Token
		if tok == "" {
			tok = inv.Token
		}
		b.holding[e.Client] = &openHold{key: inv.Key, token: tok, fence: e.Fence, from: e.Time}
	case e.F == history.FFence && e.Type == history.OK:
		if h := b.holding[e.Client]; h != nil && e.Fence != 0 {
			h.fence = e.Fence
		}
	case e.F == history.FExtend && e.Type == history.Fail && strings.Contains(e.Error, "not held"):
		// The server said the lock is gone; a transport error says nothing,
		// and the client works on until its lease's deadline.
		b.closeHold(e.Client, e.Time, false)
	case e.F == history.FRead && e.Verdict == history.Rejected:
		b.addMark(Mark{Client: e.Client, Op: history.FRead, Time: e.Time, Token: opToken(e, inv), Fence: opFence(e, inv), Verdict: history.Rejected, Reason: e.Error})
	case e.F == history.FWrite:
		v := "unknown"
		switch {
		case e.Type == history.OK:
			v = history.Accepted
		case e.Verdict == history.Rejected:
			v = history.Rejected
		case e.Type == history.Fail:
			return // never reached the data: neither landed nor refused
		}
		b.addMark(Mark{Client: e.Client, Op: history.FWrite, Time: e.Time, Token: opToken(e, inv), Fence: opFence(e, inv), Verdict: v, Reason: e.Error})
	}
}

// closeAll ends the holds and fault bands still open at the last event.
func (b *timelineBuilder) closeAll(end int64) {
	for c := range b.holding {
		b.closeHold(c, end, true)
	}
	for k, st := range b.openFaults {
		b.tl.Faults = append(b.tl.Faults, Band{From: st.Time, To: end, Label: k})
	}
	sort.SliceStable(b.tl.Faults, func(i, j int) bool { return b.tl.Faults[i].From < b.tl.Faults[j].From })
}

// overlayDoubles draws each double holder inside [from, end] as a band,
// marks the stale client's writes in it (and a second after) and the two
// holds it joins: older and newer, invalid when the server granted twice.
func (b *timelineBuilder) overlayDoubles(doubles []checker.DoubleHolder, from, end int64) {
	byToken := map[string][]int{}
	for i, h := range b.tl.Holds {
		byToken[h.Token] = append(byToken[h.Token], i)
	}
	for _, d := range doubles {
		if d.End < from || d.Start > end {
			continue // outside a windowed timeline (TimelineFrom)
		}
		b.tl.Doubles = append(b.tl.Doubles, Band{From: d.Start, To: d.End, Label: d.Cause, Client: d.StaleClient, New: d.NewClient})
		for i := range b.tl.Writes {
			w := &b.tl.Writes[i]
			if w.Client == d.StaleClient && w.Time >= d.Start && w.Time <= d.End+int64(1e9) {
				w.Stale = true
			}
		}
		b.markHolds(byToken, d, d.StaleToken, d.StaleClient, "older", d.NewClient)
		b.markHolds(byToken, d, d.NewToken, d.NewClient, "newer", d.StaleClient)
	}
}

// markHolds marks the client's holds of the double holder's token (or, for a
// token the history did not carry, its holds of the key across the span)
// with their role beside the other client.
func (b *timelineBuilder) markHolds(byToken map[string][]int, d checker.DoubleHolder, token string, client int, role string, with int) {
	idx := byToken[token]
	if token == "" {
		idx = nil
		for i, h := range b.tl.Holds {
			if h.Key == d.Key && h.Client == client && h.From <= d.End && h.To >= d.Start {
				idx = append(idx, i)
			}
		}
	}
	for _, i := range idx {
		h := &b.tl.Holds[i]
		if h.Client != client {
			continue
		}
		if d.DoubleGrant {
			h.Invalid = true
		}
		if h.Double == "" || role == "newer" {
			h.Double, h.With = role, with
		}
	}
}

func opToken(e, inv history.Event) string {
	if e.Token != "" {
		return e.Token
	}
	return inv.Token
}

func opFence(e, inv history.Event) int64 {
	if e.Fence != 0 {
		return e.Fence
	}
	return inv.Fence
}

// shortToken is a token's first 8 characters, enough to tell holds apart.
func shortToken(t string) string {
	if len(t) > 8 {
		return t[:8]
	}
	return t
}

// secs formats a true time as seconds since the timeline's start.
func (tl Timeline) secs(t int64) string {
	return fmt.Sprintf("%.3f s", float64(t-tl.Start)/1e9)
}

// holdTitle is a hold's hover text: who, which key, token, fence, when.
func (tl Timeline) holdTitle(h Hold) string {
	var b strings.Builder
	fmt.Fprintf(&b, "client %d held %s from %s to %s (%s)", h.Client, h.Key, tl.secs(h.From), tl.secs(h.To), checker.HumanDuration(float64(h.To-h.From)/1e6))
	if h.Incomplete {
		b.WriteString(", never released")
	}
	fmt.Fprintf(&b, "; token %s", shortToken(h.Token))
	if h.Fence != 0 {
		fmt.Fprintf(&b, ", fence %d", h.Fence)
	}
	switch h.Double {
	case "older":
		fmt.Fprintf(&b, "; the OLDER holder of a double holder with client %d", h.With)
	case "newer":
		fmt.Fprintf(&b, "; the NEWER holder of a double holder with client %d (granted while client %d's lease was alive)", h.With, h.With)
	}
	return b.String()
}

// markTitle is a read's or write's hover text.
func (tl Timeline) markTitle(m Mark) string {
	var b strings.Builder
	what := map[string]string{history.Accepted: "accepted", history.Rejected: "turned away by the fence", "unknown": "outcome unknown"}[m.Verdict]
	if m.Count > 1 {
		fmt.Fprintf(&b, "client %d: %d %ss %s, %s to %s", m.Client, m.Count, m.Op, what, tl.secs(m.Time), tl.secs(m.Until))
	} else {
		fmt.Fprintf(&b, "client %d: %s %s at %s", m.Client, m.Op, what, tl.secs(m.Time))
	}
	if m.Stale && m.Verdict == history.Accepted {
		b.WriteString(" (a stale holder's write that landed)")
	}
	fmt.Fprintf(&b, "; token %s", shortToken(m.Token))
	if m.Fence != 0 {
		fmt.Fprintf(&b, ", fence %d", m.Fence)
	}
	if m.Reason != "" {
		fmt.Fprintf(&b, "; %s", m.Reason)
	}
	return b.String()
}

// secondTicks labels whole seconds at a step that keeps 10 to 25 labels.
func secondTicks(lo, hi float64) []tick {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 20, 30, 60, 120, 300} {
		step = s
		if (hi-lo)/s <= 25 {
			break
		}
	}
	var out []tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		out = append(out, tick{v, fmt.Sprintf("%g", v)})
	}
	return out
}

type tick struct {
	v     float64
	label string
}

// TimelineMaxEvents is the most events a timeline draws. A soak run's
// history (a 1-hour, 64-client run is ~10 million events) would be a smear
// of hundreds of thousands of bars, and drawing it took longer than checking
// it (2.8 s of 5.9 s at 1M events); past this the timeline shows a window.
const TimelineMaxEvents = 200_000

// TimelineFrom is the time a windowed timeline starts from: 2 s before the
// first violation that counts, else the history's start t0. The window is
// the max events from the first one stamped at or after it (the last max
// when fewer follow).
func TimelineFrom(t0 int64, res *checker.Result) int64 {
	if res != nil {
		for _, v := range res.Violations {
			if v.Affects != "none" {
				return v.Start - 2e9
			}
		}
	}
	return t0
}

// WindowNote is the title's note on a window w of a history of n events
// from t0 to tEnd.
func WindowNote(w []history.Event, t0, tEnd int64, n int) string {
	return fmt.Sprintf(" (window %.1f–%.1f s of %.1f s: %d of %d events)",
		float64(w[0].Time-t0)/1e9, float64(w[len(w)-1].Time-t0)/1e9, float64(tEnd-t0)/1e9, len(w), n)
}
