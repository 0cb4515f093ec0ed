package checker

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
)

// History is what the checker keeps of a history: one compact record per
// client operation (its invoke paired with its completion) and the nemesis
// events, not the events themselves. A Builder fills it one event at a time,
// so that `lockjepsen check` streams history.jsonl (history.Scan) instead of
// holding every history.Event; the check then expands one group of keys at a
// time into Ops (CheckHistory). On 1M events the events were 288 MB of a
// 700 MB live heap; a record is 96 bytes with no pointers, so the collector
// never scans the records (an Op is 176 bytes, most of them strings).
type History struct {
	recs   []rec           // in call order (ties by invoke index)
	nem    []history.Event // by time, ties by index
	strs   []string        // operation names, keys, tokens, outcomes, errors
	notes  []opNotes       // the rare strings, one copy of each combination
	t0     int64           // time of the first event
	tEnd   int64           // time of the last event
	events int
	done   []int32 // Replay: indexes of completed records by completion time and index
	// unsorted: the events did not come in time order (ties by index), as a
	// crashed run's file does not.
	unsorted bool
	lastKey  [2]int64
	// group[k]: the group of key k (an index into strs). Keys that share a
	// token are one group: a token's grants and critical sections are then
	// judged together, as they were when one check held every op.
	group map[uint32]uint32
}

// rec is one operation as the History keeps it; Op is the same, expanded.
type rec struct {
	call, done         int64
	invokeIndex        int64
	doneIndex          int64 // -1 while in flight
	ttl                int64 // ns
	fence, value       int64
	process            history.Process
	client             int
	f, key, token, err uint32 // indexes into History.strs
	outcome, notes     uint32 // strs; notes: History.notes, 0 = none
	_                  [6]byte
}

// grantTimes are the return times of the acquires that completed ok: the
// grants a fault window counts.
func (h *History) grantTimes() []int64 {
	var out []int64
	for i := range h.recs {
		r := &h.recs[i]
		if r.doneIndex >= 0 && h.strs[r.f] == string(history.FAcquire) && h.strs[r.outcome] == string(history.OK) {
			out = append(out, r.done)
		}
	}
	return out
}

// Len is the number of events the history had.
func (h *History) Len() int { return h.events }

// Start and End are the times of the first and the last event.
func (h *History) Start() int64 { return h.t0 }
func (h *History) End() int64   { return h.tEnd }

// Sorted reports whether the events came in time order, ties by index: then
// a second pass over the file can stop after the last event it needs.
func (h *History) Sorted() bool { return !h.unsorted }

// Builder pairs invokes with their completions as events arrive. Events of
// one process must come in time order (ties by index), as history.Scan
// guarantees and history.Sort gives; events of different processes may come
// in any order, which is what lets it read history.jsonl as it stands (a
// crashed run's file is not sorted). Check's events, sorted, give the same
// operations in the same order as a stream of the file.
type Builder struct {
	h        History
	inflight map[history.Process]int      // process → index in h.recs of its op in flight
	last     map[history.Process][2]int64 // process → time and index of its latest event
	ids      map[string]uint32            // h.strs's index
	noteIDs  map[opNotes]uint32           // h.notes's index
	doneKey  map[opID]string              // keyless invokes: their completion's key
	keyless  bool                         // some invoke had no key: resolved at the end
	// Tokens are most of the strings (a failed acquire's is never seen
	// again): they are shared through a map emptied every 65536 tokens
	// (a token's ops come close together), and linked to their key by
	// hash in a map without pointers, so the collector scans neither. A
	// map of every token was 3.3M entries at 10M events, scanned at every
	// collection while the file was read.
	tokIDs   map[string]uint32
	tokenKey map[uint64]uint32 // token's hash → key of its first op, +1
	seed     maphash.Seed
	links    [][2]uint32  // pairs of keys that share a token
	recent   [24]recentID // id's cache
	next     int
}

// opID names an op while the builder sorts them.
type opID struct {
	p           history.Process
	call, index int64
}

// NewBuilder starts an empty history.
func NewBuilder() *Builder {
	b := &Builder{inflight: make(map[history.Process]int), last: make(map[history.Process][2]int64),
		ids: make(map[string]uint32), noteIDs: make(map[opNotes]uint32), tokIDs: make(map[string]uint32),
		tokenKey: make(map[uint64]uint32), seed: maphash.MakeSeed()}
	b.h.notes = []opNotes{{}}
	b.noteIDs[opNotes{}] = 0
	b.id("")
	return b
}

// id interns s into the history's string table. Operation names, keys and
// outcomes come back on every line: a few recent ones are compared before
// the map is asked (history.Scan hands the same string back, so == stops at
// the pointer). The map was 0.4 s of 2.1 s reading 1M events.
func (b *Builder) id(s string) uint32 {
	for _, c := range b.recent {
		if c.s == s {
			return c.id
		}
	}
	i, ok := b.ids[s]
	if !ok {
		i = uint32(len(b.h.strs))
		b.h.strs = append(b.h.strs, s)
		b.ids[s] = i
	}
	b.recent[b.next%len(b.recent)] = recentID{s, i}
	b.next++
	return i
}

type recentID struct {
	s  string
	id uint32
}

// note sets one of r's rare strings, sharing the combination.
func (b *Builder) note(r *rec, set func(*opNotes)) {
	n := b.h.notes[r.notes]
	set(&n)
	i, ok := b.noteIDs[n]
	if !ok {
		i = uint32(len(b.h.notes))
		b.h.notes = append(b.h.notes, n)
		b.noteIDs[n] = i
	}
	r.notes = i
}

// Grow makes room for n more operations: appending a million ops one by one
// allocated five times their size (652 MB for 120 MB kept on 1M events).
func (b *Builder) Grow(n int) { b.h.recs = slices.Grow(b.h.recs, n) }

// Add takes one event. Structural errors (a completion without an invoke,
// two ops in flight on one process, a completion for another function) make
// the history uncheckable and are returned naming the event.
func (b *Builder) Add(e *history.Event) error {
	b.stamp(e)
	if !e.IsClient() {
		b.h.nem = append(b.h.nem, *e)
		return nil
	}
	if l, seen := b.last[e.Process]; seen && e.Time == l[0] && e.Index < l[1] {
		// Sorting would put this event before the previous one of its
		// process: the pairing would differ from the file's. Real histories
		// never do this (a process's events are written in order).
		return fmt.Errorf("event %d: process %d's events stamped at the same time are out of index order (after event %d)", e.Index, e.Process, l[1])
	}
	b.last[e.Process] = [2]int64{e.Time, e.Index}
	if e.Type == history.Invoke {
		return b.invoke(e)
	}
	return b.complete(e)
}

// stamp widens the history's span to e and notes whether e came out of
// (time, index) order.
func (b *Builder) stamp(e *history.Event) {
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
}

// invoke opens an operation: its process's one in flight.
func (b *Builder) invoke(e *history.Event) error {
	h := &b.h
	if j, busy := b.inflight[e.Process]; busy {
		return fmt.Errorf("event %d: process %d invokes %s while its %s (event %d) has not completed; a process may have one operation in flight",
			e.Index, e.Process, e.F, h.strs[h.recs[j].f], h.recs[j].invokeIndex)
	}
	b.inflight[e.Process] = len(h.recs)
	r := rec{
		f: b.id(e.F), key: b.id(e.Key), token: b.tokenID(e.Token), client: e.Client, process: e.Process,
		ttl: e.TTLMs * 1e6, call: e.Time, outcome: b.id(string(history.Info)),
		fence: e.Fence, invokeIndex: e.Index, doneIndex: -1,
	}
	if e.Value != nil {
		r.value = *e.Value
		b.note(&r, func(n *opNotes) { n.hasValue = true })
	}
	if e.Node != "" {
		b.note(&r, func(n *opNotes) { n.node = e.Node })
	}
	if e.Expiry == history.ExpiryNone {
		b.note(&r, func(n *opNotes) { n.noExpiry = true })
	}
	if e.Key == "" {
		b.keyless = true
		b.note(&r, func(n *opNotes) { n.keyless = true })
	} else {
		b.link(e.Token, r.key)
	}
	h.recs = append(h.recs, r)
	return nil
}

// complete closes its process's operation with e, after checking that e
// answers that invoke.
func (b *Builder) complete(e *history.Event) error {
	h := &b.h
	j, busy := b.inflight[e.Process]
	if !busy {
		return fmt.Errorf("event %d: %s %s on process %d without a preceding invoke", e.Index, e.Type, e.F, e.Process)
	}
	r := &h.recs[j]
	if f := h.strs[r.f]; f != e.F {
		return fmt.Errorf("event %d: %s completes %q but process %d invoked %q (event %d)", e.Index, e.Type, e.F, e.Process, f, r.invokeIndex)
	}
	if tok := h.strs[r.token]; e.Token != "" && e.Token != tok {
		return fmt.Errorf("event %d: completion's token %q differs from its invoke's %q (event %d)", e.Index, e.Token, tok, r.invokeIndex)
	}
	if e.Time < r.call {
		return fmt.Errorf("event %d: completion stamped before its invoke (event %d)", e.Index, r.invokeIndex)
	}
	delete(b.inflight, e.Process)
	r.outcome = b.id(string(e.Type))
	r.done = e.Time
	r.doneIndex = e.Index
	if e.Type == history.Fail {
		r.err = b.id(e.Error)
	}
	b.noteCompletion(r, e)
	return nil
}

// noteCompletion keeps what a completion says beyond its outcome: the
// validity a library reported, the fence and its source, a read's value,
// the reply and verdict of a fault on it, a keyless invoke's key.
func (b *Builder) noteCompletion(r *rec, e *history.Event) {
	h := &b.h
	if e.ValidityMs != 0 && e.Type == history.OK { // below 0: handed over expired (ownership.go)
		b.note(r, func(n *opNotes) { n.validity = e.ValidityMs * 1e6 })
	}
	f := h.strs[r.f]
	if e.Fence != 0 && (f == history.FAcquire || f == history.FFence) {
		r.fence = e.Fence
		src := e.FenceSource
		if src == "" {
			src = history.FenceValkey
		}
		b.note(r, func(n *opNotes) { n.fenceSource = src })
	}
	if e.Value != nil && f == history.FRead {
		r.value = *e.Value
		b.note(r, func(n *opNotes) { n.hasValue = true })
	}
	if e.Reply != "" {
		b.note(r, func(n *opNotes) { n.reply = e.Reply })
	}
	if e.Verdict != "" {
		b.note(r, func(n *opNotes) {
			n.verdict = e.Verdict
			if e.Verdict == history.Rejected {
				n.reason = e.Error
			}
		})
	}
	if h.notes[r.notes].keyless && e.Key != "" {
		if b.doneKey == nil {
			b.doneKey = make(map[opID]string)
		}
		if _, seen := b.doneKey[opID{r.process, r.call, r.invokeIndex}]; !seen {
			b.doneKey[opID{r.process, r.call, r.invokeIndex}] = e.Key
		}
	}
}

// link notes that token is used on key; a token on two keys joins them.
// Two tokens with the same hash on two keys join them too: judging keys
// together gives the verdicts judging them apart does.
func (b *Builder) link(token string, key uint32) {
	hash := maphash.String(b.seed, token)
	switch k := b.tokenKey[hash]; {
	case k == 0:
		b.tokenKey[hash] = key + 1
	case k != key+1:
		b.links = append(b.links, [2]uint32{k - 1, key})
	}
}

// tokenID adds a token to the history's string table, once per stretch of
// 65536 tokens.
func (b *Builder) tokenID(s string) uint32 {
	if i, ok := b.tokIDs[s]; ok {
		return i
	}
	if len(b.tokIDs) >= 1<<16 {
		clear(b.tokIDs)
	}
	i := uint32(len(b.h.strs))
	b.h.strs = append(b.h.strs, s)
	b.tokIDs[s] = i
	return i
}

// History finishes the history: operations in call order (the order of
// their invokes in a sorted history), nemesis events in time order, keys
// in groups. The runner may have died with operations in flight; they stay
// unknown.
func (b *Builder) History() *History {
	h := &b.h
	byCall := func(x, y rec) int {
		return cmp.Or(cmp.Compare(x.call, y.call), cmp.Compare(x.invokeIndex, y.invokeIndex))
	}
	if !slices.IsSortedFunc(h.recs, byCall) { // a sorted file's are already
		slices.SortStableFunc(h.recs, byCall)
	}
	if b.keyless {
		// An invoke without a key belongs to the key of its token's latest
		// invoke before it (else its completion's key).
		tokenKey := make(map[string]uint32)
		for i := range h.recs {
			r := &h.recs[i]
			if !h.notes[r.notes].keyless {
				if h.strs[r.token] != "" {
					tokenKey[h.strs[r.token]] = r.key
				}
				continue
			}
			k, ok := tokenKey[h.strs[r.token]]
			if !ok || h.strs[k] == "" {
				k = b.id(b.doneKey[opID{r.process, r.call, r.invokeIndex}])
			}
			r.key = k
			b.note(r, func(n *opNotes) { n.keyless = false })
			b.link(h.strs[r.token], r.key)
		}
	}
	// Keys that share a token form one group (union-find over the links).
	parent := make(map[uint32]uint32)
	var find func(k uint32) uint32
	find = func(k uint32) uint32 {
		p, ok := parent[k]
		if !ok || p == k {
			return k
		}
		root := find(p)
		parent[k] = root
		return root
	}
	for _, l := range b.links {
		if a, c := find(l[0]), find(l[1]); a != c {
			parent[max(a, c)] = min(a, c)
		}
	}
	h.group = make(map[uint32]uint32)
	for i := range h.recs {
		if k := h.recs[i].key; h.group[k] == 0 {
			h.group[k] = find(k) + 1
		}
	}
	history.Sort(h.nem)
	h.done = make([]int32, 0, len(h.recs))
	for i := range h.recs {
		if h.recs[i].done != 0 {
			h.done = append(h.done, int32(i))
		}
	}
	slices.SortStableFunc(h.done, func(a, b int32) int {
		x, y := &h.recs[a], &h.recs[b]
		return cmp.Or(cmp.Compare(x.done, y.done), cmp.Compare(x.doneIndex, y.doneIndex))
	})
	b.inflight, b.last, b.ids, b.noteIDs, b.doneKey, b.tokIDs, b.tokenKey, b.links = nil, nil, nil, nil, nil, nil, nil, nil
	return h
}

// groups lists the key groups, each in the order of the keys' first ops.
func (h *History) groups() [][]uint32 {
	at := make(map[uint32]int)
	var out [][]uint32
	seen := make(map[uint32]bool)
	for i := range h.recs {
		k := h.recs[i].key
		if seen[k] {
			continue
		}
		seen[k] = true
		g := h.group[k]
		j, ok := at[g]
		if !ok {
			j = len(out)
			at[g] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], k)
	}
	return out
}

// ops expands the records of the given keys (all of them when keys is nil)
// into Ops, in call order.
func (h *History) ops(keys []uint32) []Op {
	in := make(map[uint32]bool, len(keys))
	for _, k := range keys {
		in[k] = true
	}
	n := 0
	for i := range h.recs {
		if keys == nil || in[h.recs[i].key] {
			n++
		}
	}
	ops := make([]Op, 0, n)
	values := make([]int64, 0, n/4)
	for i := range h.recs {
		r := &h.recs[i]
		if keys != nil && !in[r.key] {
			continue
		}
		o := Op{F: h.strs[r.f], Key: h.strs[r.key], Token: h.strs[r.token], Client: r.client, Process: r.process,
			TTL: r.ttl, Validity: h.notes[r.notes].validity, Call: r.call, Return: never, Done: r.done,
			Outcome: history.Type(h.strs[r.outcome]), Fence: r.fence, Err: h.strs[r.err],
			InvokeIndex: r.invokeIndex, DoneIndex: r.doneIndex}
		if r.notes != 0 {
			o.notes = &h.notes[r.notes]
		}
		if o.Outcome != history.Info {
			o.Return = r.done
		}
		if h.notes[r.notes].hasValue {
			if len(values) == cap(values) {
				values = make([]int64, 0, max(64, n/4))
			}
			values = append(values, r.value)
			o.Value = &values[len(values)-1]
		}
		ops = append(ops, o)
	}
	return ops
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
	return h.ops(nil), h.nem, nil
}

// Before counts the events stamped before t.
func (h *History) Before(t int64) int {
	n := 0
	for i := range h.recs {
		r := &h.recs[i]
		if r.call < t {
			n++
		}
		if r.done != 0 && r.done < t {
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

// Replay yields every event of the history in time order (ties by index),
// rebuilt from the records: the nemesis events as they were, and for each
// operation its invoke (index, time, process, f, client, key, token, ttl_ms,
// node, a write's value) and its completion (index, time, type, the error of
// a fail or of a rejected read or write, verdict, the fence and validity of
// a grant, a read's value, the reply fault that reached it). Fields the checker does not keep (a
// completion's node, an info's error text) are empty. This is how the
// runner replays a checked history through the metrics without holding the
// events. Replays may run concurrently.
func (h *History) Replay() iter.Seq[history.Event] {
	return func(yield func(history.Event) bool) { h.replay(yield) }
}

func (h *History) replay(yield func(history.Event) bool) {
	done := h.done
	type key struct{ t, i int64 }
	less := func(a, b key) bool { return a.t < b.t || a.t == b.t && a.i < b.i }
	var e history.Event
	i, j, k := 0, 0, 0
	for i < len(h.recs) || j < len(done) || k < len(h.nem) {
		best, which := key{}, -1
		if i < len(h.recs) {
			best, which = key{h.recs[i].call, h.recs[i].invokeIndex}, 0
		}
		if j < len(done) {
			r := &h.recs[done[j]]
			if c := (key{r.done, r.doneIndex}); which < 0 || less(c, best) {
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
			r := &h.recs[i]
			i++
			e = history.Event{Index: r.invokeIndex, Time: r.call, Process: r.process, Type: history.Invoke, F: h.strs[r.f],
				Client: r.client, Key: h.strs[r.key], Token: h.strs[r.token], TTLMs: r.ttl / 1e6, Node: h.notes[r.notes].node}
			if h.notes[r.notes].noExpiry {
				e.Expiry = history.ExpiryNone
			}
			if e.F == history.FWrite && h.notes[r.notes].hasValue {
				e.Value = history.Int64(r.value)
			}
		case 1:
			r := &h.recs[done[j]]
			j++
			n := &h.notes[r.notes]
			e = history.Event{Index: r.doneIndex, Time: r.done, Process: r.process, Type: history.Type(h.strs[r.outcome]),
				F: h.strs[r.f], Client: r.client, Key: h.strs[r.key], Token: h.strs[r.token], Verdict: n.verdict,
				Error: h.strs[r.err], Reply: n.reply}
			if n.reason != "" {
				e.Error = n.reason
			}
			if e.F == history.FAcquire || e.F == history.FFence {
				e.Fence, e.FenceSource, e.ValidityMs = r.fence, n.fenceSource, n.validity/1e6
			}
			if e.F == history.FRead && n.hasValue {
				e.Value = history.Int64(r.value)
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
