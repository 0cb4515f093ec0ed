package checker

import (
	"math"
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

// never is the return time of an operation whose outcome is unknown: as in
// Jepsen, it may take effect at any later point.
const never = math.MaxInt64

// Op is one client operation: an invoke paired with its completion.
type Op struct {
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
	Value    *int64 // read: value seen; write: value written
	Err      string // a failed op: the server's or client's words
	// notes holds the strings most operations lack (FenceSource, Verdict,
	// Reason, Node), shared between the ops that have the same: a check
	// holds every op (10M events are 5M ops), and these four strings were
	// 64 of an Op's 240 bytes.
	notes *opNotes

	InvokeIndex int64
	DoneIndex   int64 // -1 when the history ended with the op in flight
}

type opNotes struct {
	fenceSource, verdict, reason, node string
	// reply: the reply fault that reached the op in flight (Event.Reply).
	reply string
	// Builder only (History's records): a Redlock grant's validity (ns),
	// whether the op has a value, whether its invoke had no key.
	validity          int64
	hasValue, keyless bool
	// noExpiry: the acquire's or extend's server never expires the lock
	// (the history's expiry none).
	noExpiry bool
	// session: the op is the server ending a session (revoke.go); a
	// pointer, so that opNotes stays comparable (the builder's map key).
	session *sessionEnd
}

// FenceSource is where an acquire's or a fence op's number came from
// (history.FenceValkey when the history does not say).
func (o *Op) FenceSource() string {
	if o.notes == nil {
		return ""
	}
	return o.notes.fenceSource
}

// NoExpiry reports that the server of an acquire or extend never expires
// the lock (PostgreSQL's advisory locks): its TTL is the client's lease.
func (o *Op) NoExpiry() bool { return o.notes != nil && o.notes.noExpiry }

// Verdict is the resource's answer to a read or write (accepted, rejected).
func (o *Op) Verdict() string {
	if o.notes == nil {
		return ""
	}
	return o.notes.verdict
}

// Reason is a rejected read's or write's refusal: the resource's words for why.
func (o *Op) Reason() string {
	if o.notes == nil {
		return ""
	}
	return o.notes.reason
}

// Node is the node the op was sent to.
func (o *Op) Node() string {
	if o.notes == nil {
		return ""
	}
	return o.notes.node
}

// Reply is the reply fault that reached the op in flight (history.ReplyCancel,
// history.ReplyDrop), "" for none.
func (o *Op) Reply() string {
	if o.notes == nil {
		return ""
	}
	return o.notes.reply
}

// Known reports whether the op's outcome is definite.
func (o *Op) Known() bool { return o.Outcome != history.Info }

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
