package shrink

import (
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Unit is what shrinking keeps or removes whole: a client operation (its
// invoke with its completion, and the resource's record of the reads and
// writes it made), or a fault (the nemesis event that began it with the one
// that healed it), or a nemesis event of its own (an observed failover, an
// audit). Half an operation is no history a client could have produced,
// and a fault without its heal would stretch to the end of the run.
type Unit struct {
	Fault  bool   // a nemesis event (with its heal), not a client operation
	F      string // the operation, or the event that began the fault
	Key    string
	Token  string
	Client int
	Node   string
	// Outcome is an operation's completion (ok, fail, info); "" while it
	// was still in flight when the history ended.
	Outcome history.Type
	// Start and End: an operation's invoke and completion, a fault's
	// event and heal; End is 0 for an operation in flight or a fault never
	// healed.
	Start, End int64

	begins   bool   // a fault's event that the catalog knows to begin one (it may be healed)
	events   [2]int // indexes into Run.Events, -1 for none
	attempts []int  // indexes into Run.Attempts
	ttl      int64  // ns, from the invoke
	value    *int64 // a write's value, from the invoke
}

// open reports whether the unit never ended: an operation in flight or a
// fault never healed, either of which lasts to the end of the history.
func (u *Unit) open() bool { return u.events[1] < 0 && (!u.Fault || u.begins) }

// end is when the unit stops mattering, for windows around a violation.
func (u *Unit) end() int64 {
	if u.open() {
		return 1<<63 - 1
	}
	return max(u.End, u.Start)
}

// buildUnits makes the units of the run, all of them (key ""), or those of
// one lock key: its operations, every fault, and the audits of that key.
// Faults are paired with their heals as the checker pairs them (the first
// unhealed fault of the heal's name on the same node), so that a removed
// fault never leaves its heal to end another.
func buildUnits(r *Run, key string, cat *marks.Catalog) []Unit {
	var units []Unit
	inflight := map[history.Process]int{}
	unhealed := map[string][]int{} // heal name + node → units of faults it would heal, oldest first
	for i := range r.Events {
		e := &r.Events[i]
		if e.Key != "" && key != "" && e.Key != key {
			continue
		}
		if !e.IsClient() {
			u := Unit{Fault: true, F: e.F, Key: e.Key, Node: e.Node, Start: e.Time, events: [2]int{i, -1}}
			if m, ok := cat.Of(e.F); ok {
				u.begins = true
				k := m.Heal + "\x00" + e.Node
				unhealed[k] = append(unhealed[k], len(units))
			} else if k := e.F + "\x00" + e.Node; e.F != history.NFailover && len(unhealed[k]) > 0 {
				f := &units[unhealed[k][0]]
				f.events[1], f.End = i, e.Time
				unhealed[k] = unhealed[k][1:]
				continue
			}
			units = append(units, u)
			continue
		}
		if e.Type == history.Invoke {
			inflight[e.Process] = len(units)
			units = append(units, Unit{F: e.F, Key: e.Key, Token: e.Token, Client: e.Client, Node: e.Node,
				Start: e.Time, events: [2]int{i, -1}, ttl: e.TTLMs * 1e6, value: e.Value})
			continue
		}
		// history.ReadFile checked that every completion answers an invoke.
		u := &units[inflight[e.Process]]
		delete(inflight, e.Process)
		u.events[1], u.End, u.Outcome = i, e.Time, e.Type
	}
	bindAttempts(r, units)
	return units
}

// bindAttempts gives each resource attempt to the client operation that
// made it: the latest read or write of its token (of its value, for a
// write) invoked before the resource decided. The checker reads an attempt
// only through such a write (a write's verdict), so an attempt that no
// operation of the units made can change no verdict here and is left out.
func bindAttempts(r *Run, units []Unit) {
	byToken := map[string][]int{}
	for i := range units {
		if u := &units[i]; !u.Fault && (u.F == history.FRead || u.F == history.FWrite) {
			byToken[u.Token] = append(byToken[u.Token], i)
		}
	}
	for ai := range r.Attempts {
		a := &r.Attempts[ai]
		ops := byToken[a.Token]
		for j := len(ops) - 1; j >= 0; j-- {
			u := &units[ops[j]]
			if u.F == a.Op && u.Start <= a.Time && (a.Op != history.FWrite || u.value != nil && *u.value == a.Value) {
				u.attempts = append(u.attempts, ai)
				break
			}
		}
	}
}

// materialize is the sub-run of the given units: their events in the
// run's order, their attempts in the log's, and the lines of nemesis.jsonl
// that record the faults kept (the fault events of history.jsonl when the
// run had no nemesis.jsonl).
func materialize(r *Run, units []Unit, set []int) *Run {
	var evs, ats []int
	for _, i := range set {
		u := &units[i]
		for _, e := range u.events {
			if e >= 0 {
				evs = append(evs, e)
			}
		}
		ats = append(ats, u.attempts...)
	}
	slices.Sort(evs)
	slices.Sort(ats)
	out := &Run{Events: make([]history.Event, len(evs)), Config: r.Config}
	for j, i := range evs {
		out.Events[j] = r.Events[i]
	}
	if r.Attempts != nil {
		out.Attempts = make([]history.Attempt, len(ats))
		for j, i := range ats {
			out.Attempts[j] = r.Attempts[i]
		}
	}
	out.Nemesis = keptNemesis(r.Nemesis, out.Events)
	return out
}

// keptNemesis picks the lines of nemesis.jsonl that record the nemesis
// events kept in history.jsonl: the same event at the same time on the same
// node (the two files number their lines apart).
func keptNemesis(nemesis, kept []history.Event) []history.Event {
	type id struct {
		t       int64
		f, node string
	}
	want := map[id]int{}
	var own []history.Event
	for i := range kept {
		if e := &kept[i]; !e.IsClient() {
			want[id{e.Time, e.F, e.Node}]++
			own = append(own, *e)
		}
	}
	if nemesis == nil {
		return own
	}
	out := []history.Event{}
	for _, e := range nemesis {
		if k := (id{e.Time, e.F, e.Node}); want[k] > 0 {
			want[k]--
			out = append(out, e)
		}
	}
	return out
}
