package checker

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
)

// History is what the checker keeps of a history: the client operations
// (each an invoke paired with its completion) and the nemesis events, not
// the events themselves. A Builder fills it one event at a time, so that
// `lockjepsen check` streams history.jsonl (history.Scan) instead of holding
// every history.Event: on 1M events the events were 288 MB of a 700 MB live
// heap, and an Op keeps one operation's two events in one record.
type History struct {
	ops    []Op            // in call order (ties by invoke index)
	nem    []history.Event // by time, ties by index
	t0     int64           // time of the first event
	tEnd   int64           // time of the last event
	events int
	done   []int32 // Replay: indexes of completed ops by completion time and index
	// unsorted: the events did not come in time order (ties by index), as a
	// crashed run's file does not.
	unsorted bool
	lastKey  [2]int64
}

// Sorted reports whether the events came in time order, ties by index: then
// a second pass over the file can stop after the last event it needs.
func (h *History) Sorted() bool { return !h.unsorted }

// Len is the number of events the history had.
func (h *History) Len() int { return h.events }

// Start and End are the times of the first and the last event.
func (h *History) Start() int64 { return h.t0 }
func (h *History) End() int64   { return h.tEnd }

// Builder pairs invokes with their completions as events arrive. Events of
// one process must come in time order (ties by index), as history.Scan
// guarantees and history.Sort gives; events of different processes may come
// in any order, which is what lets it read history.jsonl as it stands (a
// crashed run's file is not sorted). Check's events, sorted, give the same
// operations in the same order as a stream of the file.
type Builder struct {
	h        History
	inflight map[history.Process]int      // process → index in h.ops of its op in flight
	last     map[history.Process][2]int64 // process → time and index of its latest event
	notes    map[opNotes]*opNotes         // one copy of each combination
	doneKey  map[opID]string              // keyless invokes: their completion's key
	keyless  bool                         // some invoke had no key: resolved at the end
}

// opID names an op while the builder sorts them.
type opID struct {
	p           history.Process
	call, index int64
}

// note sets one of o's rare strings, sharing the combination.
func (b *Builder) note(o *Op, set func(*opNotes)) {
	var n opNotes
	if o.notes != nil {
		n = *o.notes
	}
	set(&n)
	p, ok := b.notes[n]
	if !ok {
		p = &n
		b.notes[n] = p
	}
	o.notes = p
}

// NewBuilder starts an empty history.
func NewBuilder() *Builder {
	return &Builder{inflight: make(map[history.Process]int), last: make(map[history.Process][2]int64),
		notes: make(map[opNotes]*opNotes)}
}

// Grow makes room for n more operations: appending a million ops one by one
// allocated five times their size (652 MB for 120 MB kept on 1M events).
func (b *Builder) Grow(n int) { b.h.ops = slices.Grow(b.h.ops, n) }

// Add takes one event. Structural errors (a completion without an invoke,
// two ops in flight on one process, a completion for another function) make
// the history uncheckable and are returned naming the event.
func (b *Builder) Add(e *history.Event) error {
	h := &b.h
	if h.events == 0 || e.Time < h.t0 {
		h.t0 = e.Time
	}
	if h.events == 0 || e.Time > h.tEnd {
		h.tEnd = e.Time
	}
	if k := [2]int64{e.Time, e.Index}; h.events > 0 && (k[0] < h.lastKey[0] || k[0] == h.lastKey[0] && k[1] < h.lastKey[1]) {
		h.unsorted = true
	} else {
		h.lastKey = k
	}
	h.events++
	if !e.IsClient() {
		h.nem = append(h.nem, *e)
		return nil
	}
	if l, seen := b.last[e.Process]; seen && e.Time == l[0] && e.Index < l[1] {
		// Sorting would put this event before the previous one of its
		// process: the pairing would differ from the file's. Real histories
		// never do this (a process's events are written in order).
		return fmt.Errorf("event %d: process %d's events stamped at the same time are out of index order (after event %d)", e.Index, e.Process, l[1])
	}
	b.last[e.Process] = [2]int64{e.Time, e.Index}
	ops := h.ops
	if e.Type == history.Invoke {
		if j, busy := b.inflight[e.Process]; busy {
			return fmt.Errorf("event %d: process %d invokes %s while its %s (event %d) has not completed; a process may have one operation in flight",
				e.Index, e.Process, e.F, ops[j].F, ops[j].InvokeIndex)
		}
		b.inflight[e.Process] = len(ops)
		o := Op{
			F: e.F, Key: e.Key, Token: e.Token, Client: e.Client, Process: e.Process,
			TTL: e.TTLMs * 1e6, Call: e.Time, Return: never, Outcome: history.Info,
			Fence: e.Fence, Value: e.Value, InvokeIndex: e.Index, DoneIndex: -1,
		}
		if e.Node != "" {
			b.note(&o, func(n *opNotes) { n.node = e.Node })
		}
		if e.Key == "" {
			b.keyless = true
		}
		h.ops = append(ops, o)
		return nil
	}
	j, busy := b.inflight[e.Process]
	if !busy {
		return fmt.Errorf("event %d: %s %s on process %d without a preceding invoke", e.Index, e.Type, e.F, e.Process)
	}
	o := &ops[j]
	if o.F != e.F {
		return fmt.Errorf("event %d: %s completes %q but process %d invoked %q (event %d)", e.Index, e.Type, e.F, e.Process, o.F, o.InvokeIndex)
	}
	if e.Token != "" && e.Token != o.Token {
		return fmt.Errorf("event %d: completion's token %q differs from its invoke's %q (event %d)", e.Index, e.Token, o.Token, o.InvokeIndex)
	}
	if e.Time < o.Call {
		return fmt.Errorf("event %d: completion stamped before its invoke (event %d)", e.Index, o.InvokeIndex)
	}
	delete(b.inflight, e.Process)
	o.Outcome = e.Type
	o.Done = e.Time
	o.DoneIndex = e.Index
	if e.Type != history.Info {
		o.Return = e.Time
	}
	if e.ValidityMs > 0 && e.Type == history.OK {
		o.Validity = e.ValidityMs * 1e6
	}
	if e.Fence != 0 && (o.F == history.FAcquire || o.F == history.FFence) {
		o.Fence = e.Fence
		src := e.FenceSource
		if src == "" {
			src = history.FenceValkey
		}
		b.note(o, func(n *opNotes) { n.fenceSource = src })
	}
	if e.Value != nil && o.F == history.FRead {
		o.Value = e.Value
	}
	if e.Type == history.Fail {
		o.Err = e.Error
	}
	if e.Verdict != "" {
		b.note(o, func(n *opNotes) {
			n.verdict = e.Verdict
			if e.Verdict == history.Rejected {
				n.reason = e.Error
			}
		})
	}
	if o.Key == "" && e.Key != "" {
		if b.doneKey == nil {
			b.doneKey = make(map[opID]string)
		}
		b.doneKey[opID{o.Process, o.Call, o.InvokeIndex}] = e.Key
	}
	return nil
}

// History finishes the history: operations in call order (the order of
// their invokes in a sorted history), nemesis events in time order. The
// runner may have died with operations in flight; they stay unknown.
func (b *Builder) History() *History {
	h := &b.h
	byCall := func(a, b Op) int {
		return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.InvokeIndex, b.InvokeIndex))
	}
	if !slices.IsSortedFunc(h.ops, byCall) { // a sorted file's are already
		slices.SortStableFunc(h.ops, byCall)
	}
	if b.keyless {
		// An invoke without a key belongs to the key of its token's latest
		// invoke before it (else its completion's key).
		tokenKey := make(map[string]string)
		for i := range h.ops {
			o := &h.ops[i]
			if o.Key != "" {
				if o.Token != "" {
					tokenKey[o.Token] = o.Key
				}
				continue
			}
			o.Key = tokenKey[o.Token]
			if o.Key == "" {
				o.Key = b.doneKey[opID{o.Process, o.Call, o.InvokeIndex}]
			}
		}
	}
	history.Sort(h.nem)
	b.inflight, b.last, b.notes, b.doneKey = nil, nil, nil, nil
	return h
}

// splitHistory pairs client invokes with their completions and separates the
// nemesis events of a history in time order.
func splitHistory(events []history.Event) ([]Op, []history.Event, error) {
	b := NewBuilder()
	for i := range events {
		if err := b.Add(&events[i]); err != nil {
			return nil, nil, err
		}
	}
	h := b.History()
	return h.ops, h.nem, nil
}

// Before counts the events stamped before t.
func (h *History) Before(t int64) int {
	n := 0
	for i := range h.ops {
		o := &h.ops[i]
		if o.Call < t {
			n++
		}
		if o.Done != 0 && o.Done < t {
			n++
		}
	}
	for i := range h.nem {
		if h.nem[i].Time < t {
			n++
		}
	}
	return n
}

// Replay calls fn for every event of the history in time order (ties by
// index), rebuilt from the operations: the nemesis events as they were, and
// for each operation its invoke (index, time, process, f, client, key,
// token, ttl_ms, node, a write's value) and its completion (index, time,
// type, the error of a fail or of a rejected read or write, verdict, the
// fence and validity of a grant, a read's value). Fields the checker does
// not keep (a completion's node, an info's error text) are empty. This is
// how the runner replays a checked history through the metrics without
// holding the events.
func (h *History) Replay() iter.Seq[history.Event] {
	return func(yield func(history.Event) bool) { h.replay(yield) }
}

func (h *History) replay(yield func(history.Event) bool) {
	if h.done == nil {
		h.done = make([]int32, 0, len(h.ops))
		for i := range h.ops {
			if h.ops[i].Done != 0 {
				h.done = append(h.done, int32(i))
			}
		}
		slices.SortStableFunc(h.done, func(a, b int32) int {
			x, y := &h.ops[a], &h.ops[b]
			return cmp.Or(cmp.Compare(x.Done, y.Done), cmp.Compare(x.DoneIndex, y.DoneIndex))
		})
	}
	done := h.done
	type key struct{ t, i int64 }
	less := func(a, b key) bool { return a.t < b.t || a.t == b.t && a.i < b.i }
	var e history.Event
	i, j, k := 0, 0, 0
	for i < len(h.ops) || j < len(done) || k < len(h.nem) {
		best, which := key{never, never}, -1
		if i < len(h.ops) {
			best, which = key{h.ops[i].Call, h.ops[i].InvokeIndex}, 0
		}
		if j < len(done) {
			o := &h.ops[done[j]]
			if c := (key{o.Done, o.DoneIndex}); which < 0 || less(c, best) {
				best, which = c, 1
			}
		}
		if k < len(h.nem) {
			if c := (key{h.nem[k].Time, h.nem[k].Index}); which < 0 || less(c, best) {
				which = 2
			}
		}
		switch which {
		case 0:
			o := &h.ops[i]
			i++
			e = history.Event{Index: o.InvokeIndex, Time: o.Call, Process: o.Process, Type: history.Invoke, F: o.F,
				Client: o.Client, Key: o.Key, Token: o.Token, TTLMs: o.TTL / 1e6, Node: o.Node()}
			if o.F == history.FWrite {
				e.Value = o.Value
			}
		case 1:
			o := &h.ops[done[j]]
			j++
			e = history.Event{Index: o.DoneIndex, Time: o.Done, Process: o.Process, Type: o.Outcome, F: o.F,
				Client: o.Client, Key: o.Key, Token: o.Token, Verdict: o.Verdict(), Error: o.Err}
			if r := o.Reason(); r != "" {
				e.Error = r
			}
			if o.F == history.FAcquire || o.F == history.FFence {
				e.Fence, e.FenceSource, e.ValidityMs = o.Fence, o.FenceSource(), o.Validity/1e6
			}
			if o.F == history.FRead {
				e.Value = o.Value
			}
		default:
			e = h.nem[k]
			k++
		}
		if !yield(e) {
			return
		}
	}
}
