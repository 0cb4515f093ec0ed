package checker

import (
	"fmt"
	"math"
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// never is the return time of an operation whose outcome is unknown: as in
// Jepsen, it may take effect at any later point.
const never = math.MaxInt64

// Op is one client operation: an invoke paired with its completion.
type Op struct {
	ID      int
	F       string
	Key     string
	Token   string
	Client  int
	Process history.Process
	TTL     int64 // ns
	// Validity is a Redlock recipe's validity (ns) on an ok acquire or extend,
	// the lease the client may use: shorter than TTL by the elapsed time and
	// the drift. 0 for the other recipes.
	Validity int64
	Call     int64
	Return   int64 // never when the outcome is unknown
	Done     int64 // time of the completion event (the info time for unknown outcomes); 0 if none
	Outcome  history.Type
	Fence    int64
	// FenceSource: where an acquire's or a fence op's number came from
	// (history.FenceValkey when the history does not say).
	FenceSource string
	Value       *int64 // read: value seen; write: value written
	Verdict     string
	Reason      string // a rejected read/write: the resource's words for why
	Err         string // a failed op: the server's or client's words
	Node        string

	InvokeIndex int64
	DoneIndex   int64 // -1 when the history ended with the op in flight
}

// Known reports whether the op's outcome is definite.
func (o *Op) Known() bool { return o.Outcome != history.Info }

// splitHistory pairs client invokes with their completions and separates the
// nemesis events. Structural errors (a completion without an invoke, two ops in
// flight on one process, a completion for another function) make the history
// uncheckable and are returned naming the event.
func splitHistory(events []history.Event) ([]Op, []history.Event, error) {
	ops := make([]Op, 0, len(events)/2+1)
	var nem []history.Event
	inflight := make(map[history.Process]int)
	tokenKey := make(map[string]string)
	for i := range events {
		e := &events[i]
		if !e.IsClient() {
			nem = append(nem, *e)
			continue
		}
		if e.Type == history.Invoke {
			if j, busy := inflight[e.Process]; busy {
				return nil, nil, fmt.Errorf("event %d: process %d invokes %s while its %s (event %d) has not completed; a process may have one operation in flight",
					e.Index, e.Process, e.F, ops[j].F, ops[j].InvokeIndex)
			}
			key := e.Key
			if key == "" {
				key = tokenKey[e.Token]
			} else if e.Token != "" {
				tokenKey[e.Token] = key
			}
			inflight[e.Process] = len(ops)
			ops = append(ops, Op{
				ID: len(ops), F: e.F, Key: key, Token: e.Token, Client: e.Client, Process: e.Process,
				TTL: e.TTLMs * 1e6, Call: e.Time, Return: never, Outcome: history.Info,
				Fence: e.Fence, Value: e.Value, Node: e.Node, InvokeIndex: e.Index, DoneIndex: -1,
			})
			continue
		}
		j, busy := inflight[e.Process]
		if !busy {
			return nil, nil, fmt.Errorf("event %d: %s %s on process %d without a preceding invoke", e.Index, e.Type, e.F, e.Process)
		}
		o := &ops[j]
		if o.F != e.F {
			return nil, nil, fmt.Errorf("event %d: %s completes %q but process %d invoked %q (event %d)", e.Index, e.Type, e.F, e.Process, o.F, o.InvokeIndex)
		}
		if e.Token != "" && e.Token != o.Token {
			return nil, nil, fmt.Errorf("event %d: completion's token %q differs from its invoke's %q (event %d)", e.Index, e.Token, o.Token, o.InvokeIndex)
		}
		if e.Time < o.Call {
			return nil, nil, fmt.Errorf("event %d: completion stamped before its invoke (event %d)", e.Index, o.InvokeIndex)
		}
		delete(inflight, e.Process)
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
			o.FenceSource = e.FenceSource
			if o.FenceSource == "" {
				o.FenceSource = history.FenceValkey
			}
		}
		if e.Value != nil && o.F == history.FRead {
			o.Value = e.Value
		}
		if e.Type == history.Fail {
			o.Err = e.Error
		}
		if e.Verdict != "" {
			o.Verdict = e.Verdict
			if e.Verdict == history.Rejected {
				o.Reason = e.Error
			}
		}
		if o.Key == "" && e.Key != "" {
			o.Key = e.Key
		}
	}
	// The runner may have died with operations in flight; they stay unknown.
	return ops, nem, nil
}

// byKey groups ops by lock key, keeping each group in call order.
func byKey(ops []Op, keep func(*Op) bool) (map[string][]*Op, []string) {
	m := make(map[string][]*Op)
	for i := range ops {
		if keep(&ops[i]) {
			m[ops[i].Key] = append(m[ops[i].Key], &ops[i])
		}
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		keys = append(keys, k)
		sort.SliceStable(v, func(a, b int) bool { return v[a].Call < v[b].Call })
	}
	sort.Strings(keys)
	return m, keys
}

func isLockOp(o *Op) bool {
	return o.F == history.FAcquire || o.F == history.FExtend || o.F == history.FRelease
}

func satAdd(a, b int64) int64 {
	if a == never || b == never {
		return never
	}
	s := a + b
	if b > 0 && s < a {
		return never
	}
	return s
}

// Lease is how long past its call an ok grant or extend certainly holds the
// lock: the TTL, or for Redlock the validity when it is shorter. Redlock
// promises the lock only for TTL − (t2 − t1) − drift from t1; t1 ≥ call, so
// call + validity never overstates it.
func (o *Op) Lease() int64 {
	if o.Validity > 0 && o.Validity < o.TTL {
		return o.Validity
	}
	return o.TTL
}
