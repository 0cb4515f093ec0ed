package checker

import (
	"slices"
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// revokeProcess numbers the releases the server made on its own: far above
// any client's processes, one each, so that porcupine sees every one as a
// process with a single operation.
const revokeProcess = 1 << 30

// revocations are the releases a server made on its own and honestly: the
// nemesis events whose mark Revokes (the server ended a session, and a
// session's lock with it), each naming the key and the client whose session
// it ended. The lock tier reads each as an ok release by that client's lock,
// called at the event's time and returned at its heal's (the first event of
// the mark's heal on the same node): the event is logged before the fault
// acts, and the server lets the lock go when the session's backend exits,
// some milliseconds on (pg-terminated-holder once saw its holder's extend
// answered ok 1 ms after the event). A revocation never healed may not have
// happened: its outcome is unknown. A grant after it is the lock working,
// not a double grant. Only the lock tier: the client did not release, so the
// double-holder count and the resource still see it act as holder until it
// learns, and its stale writes are the fence's to turn away.
func revocations(nem []history.Event, cat *marks.Catalog) []*Op {
	var out []*Op
	for i, e := range nem {
		m, ok := cat.Of(e.F)
		if !ok || !m.Revokes || e.Key == "" {
			continue
		}
		o := &Op{F: history.FRelease, Key: e.Key, Token: e.Token, Client: e.Client,
			Process: history.Process(revokeProcess + len(out)), Call: e.Time, Return: never, Done: never,
			Outcome: history.Info, InvokeIndex: e.Index, DoneIndex: -1}
		for _, h := range nem[i+1:] {
			if h.F == m.Heal && h.Node == e.Node {
				o.Return, o.Done, o.DoneIndex, o.Outcome = h.Time, h.Time, h.Index, history.OK
				break
			}
		}
		out = append(out, o)
	}
	return out
}

// revoke adds the revocation r to ops (one key's lock ops, in call order):
// the end of the client's session, which releases whatever grant of the key
// that session holds when it ends, and nothing when it holds none. Its Token
// is the client's latest acquire called before it (an event that names a
// token keeps it): the grant the fault found, which the double-holder count
// reads. The model releases any grant of the client's that may be alive
// when the session ends (sessionTokens, every acquire of the client's called
// before the heal): the fault reads pg_locks, then terminates, and between
// the two the holder may release (the session then ends holding nothing: a
// soak of pg-terminated-holder saw the holder's release answered ok 22 ms
// after the event, and a model that released the token a second time called
// that ok impossible) or release and take the key again (the new grant goes).
func revoke(ops []*Op, r *Op) []*Op {
	var tokens []string
	named := r.Token != ""
	for _, o := range ops {
		if o.Call > r.Return {
			break
		}
		if o.F == history.FAcquire && o.Client == r.Client && o.Outcome != history.Fail {
			if o.Call <= r.Call && !named {
				r.Token = o.Token
			}
			tokens = append(tokens, o.Token)
		}
	}
	if r.Token != "" && !slices.Contains(tokens, r.Token) {
		tokens = append(tokens, r.Token)
	}
	if len(tokens) == 0 {
		return ops
	}
	r.notes = &opNotes{session: &sessionEnd{tokens: tokens}}
	return insertByCall(ops, r)
}

// sessionEnd is what a revocation releases: the grants the session may
// hold when it ends.
type sessionEnd struct{ tokens []string }

// revocation says whether o is a server's end of a session (revoke).
func (o *Op) revocation() bool { return o.notes != nil && o.notes.session != nil }

// insertByCall adds o to ops, which are in call order, keeping the order.
func insertByCall(ops []*Op, o *Op) []*Op {
	i := sort.Search(len(ops), func(i int) bool { return ops[i].Call > o.Call })
	ops = append(ops, nil)
	copy(ops[i+1:], ops[i:])
	ops[i] = o
	return ops
}
