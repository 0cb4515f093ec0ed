package checker

import (
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
)

// StuckAfterTTLs is k: a key no client could take for longer than k × TTL,
// while clients kept trying and no live holder renewed it, is a stuck lock.
const StuckAfterTTLs = 3

// LivenessResult is the liveness verdict: locks nobody could ever take again.
// Safety (lock, resource) says nothing bad happened; this says something
// good (another client getting the lock) stopped happening for good.
type LivenessResult struct {
	Valid Validity `json:"valid"`
	// K: a key counts as stuck after k × TTL of refused attempts.
	K int `json:"k"`
	// Audited: the history holds the runner's end-of-run PTTL audit
	// (audit-pttl events); a stuck key must then show -1 (no expiry) there.
	Audited    bool        `json:"audited"`
	StuckLocks []StuckLock `json:"stuck_locks"`
	// CutOff are the clients that never reached the lock service; they do
	// not change the verdict.
	CutOff []CutOffClient `json:"cut_off,omitempty"`
}

// StuckLock is one key that stayed taken with nobody renewing it.
type StuckLock struct {
	Key string `json:"key"`
	// Since is when the last lease anyone was granted or may have been
	// granted (call + TTL of the last ok or unknown acquire or extend) ran out.
	Since  int64   `json:"since"`
	SinceS float64 `json:"since_s"`
	// RefusedMs is how long clients kept being refused after Since;
	// Attempts counts those refused acquires.
	RefusedMs float64 `json:"refused_ms"`
	Attempts  int     `json:"attempts"`
	// LeftBy is the operation that left the key behind: the last grant or
	// extend, ok or unknown, before Since.
	LeftBy LeftBy `json:"left_by"`
	// Unknown are the latest operations on the key before Since whose
	// outcome is unknown (acquires, extends and releases that ended info),
	// newest first, at most maxUnknownListed; UnknownCount counts them all.
	// Any of them may be what left the key taken: the checker sees the
	// replies, not the server's state (a consensus run's stuck lock node was an
	// earlier client's unknown acquire and release, not the last one's).
	Unknown      []LeftBy `json:"unknown,omitempty"`
	UnknownCount int      `json:"unknown_count,omitempty"`
	// Audit is the PTTL every node reported for the key at the end (ms; -1 no
	// expiry, -2 no key).
	Audit map[string]int64 `json:"audit,omitempty"`
	// Explanation is written by the report (report.Explain).
	Explanation string `json:"explanation"`
	// Left is the operation LeftBy names (nil when none); Audited: the run
	// had an end-of-run PTTL audit.
	Left    *Op  `json:"-"`
	Audited bool `json:"-"`
}

// leftByOf names o as a LeftBy, its time from t0.
func leftByOf(o *Op, t0 int64) LeftBy {
	return LeftBy{F: o.F, Client: o.Client, Token: o.Token, Outcome: o.Outcome, Event: o.InvokeIndex, TimeS: rel(o.Call, t0)}
}

// LeftBy names an operation of the history.
type LeftBy struct {
	F       string       `json:"f"`
	Client  int          `json:"client"`
	Token   string       `json:"token"`
	Outcome history.Type `json:"outcome"`
	Event   int64        `json:"event"` // the invoke's history index
	TimeS   float64      `json:"time_s"`
}

// Liveness finds stuck locks (livenessAudit, then stuckLock per key): per key, the last lease anyone may hold ends at
// S = max(call + ttl) over ok and unknown acquires and extends; if refused
// acquires keep coming for k × TTL after S and none is granted, the key is
// stuck. When the run has a PTTL audit, the key must also show -1 on some
// node; a -1 there alone is stuck too (the Valkey 9 lock article's "-1 on a lock key is a bug").
func livenessAudit(nem []history.Event) (audited bool, audit map[string]map[string]int64) {
	audit = map[string]map[string]int64{}
	for _, e := range nem {
		if e.F == history.NAuditPTTL && e.Value != nil {
			audited = true
			if audit[e.Key] == nil {
				audit[e.Key] = map[string]int64{}
			}
			audit[e.Key][e.Node] = *e.Value
		}
	}
	return audited, audit
}

// stuckLock judges one key on its lock operations (call order) and the
// audit's PTTLs for it; nil when the key is not stuck.
func stuckLock(key string, ops []*Op, audited bool, audit map[string]int64, t0 int64) *stuckOutcome {
	var left *Op
	var since int64
	for _, o := range ops {
		if (o.F == history.FAcquire || o.F == history.FExtend) && o.Outcome != history.Fail {
			if end := o.Call + o.TTL; left == nil || end > since {
				left, since = o, end
			}
		}
	}
	var attempts int
	var last int64
	granted := false
	for _, o := range ops {
		if o.F != history.FAcquire || o.Call < since {
			continue
		}
		if o.Outcome == history.OK {
			granted = true
		} else {
			attempts++
			last = max(last, o.Call)
		}
	}
	noExpiry := false
	for _, v := range audit {
		noExpiry = noExpiry || v == -1
	}
	byHistory := left != nil && !granted && attempts >= 3 && last-since >= int64(StuckAfterTTLs)*left.TTL
	if !(noExpiry || (byHistory && !audited)) {
		return nil
	}
	s := StuckLock{Key: key, Since: since, SinceS: rel(since, t0), Attempts: attempts, Audit: audit}
	if last > since {
		s.RefusedMs = float64(last-since) / 1e6
	}
	if left != nil {
		s.LeftBy = leftByOf(left, t0)
	}
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if o.Outcome != history.Info || o.Call >= since || o == left {
			continue
		}
		s.UnknownCount++
		if len(s.Unknown) < maxUnknownListed {
			s.Unknown = append(s.Unknown, leftByOf(o, t0))
		}
	}
	s.Left, s.Audited = left, audited
	v := Violation{Kind: "stuck-lock", Affects: "liveness", Key: key, Start: since, End: max(since, last),
		Clients: []int{}, Cause: "no-expiry", Facts: &Facts{Stuck: &s}}
	if left != nil {
		v.Clients, v.Tokens, v.Events = []int{left.Client}, []string{left.Token}, []int64{left.InvokeIndex}
	}
	for _, u := range s.Unknown {
		if !slices.Contains(v.Clients, u.Client) {
			v.Clients = append(v.Clients, u.Client)
		}
	}
	return &stuckOutcome{lock: s, violation: v}
}

// maxUnknownListed bounds the unknown operations a stuck lock names: under
// a network fault a key can have hundreds.
const maxUnknownListed = 5

// CutOffAfter is how many acquires a client makes, none granted and none
// refused for another holder, before the summary calls it cut off.
const CutOffAfter = 10

// CutOffClient is a client that asked for locks and never reached the lock
// service: every acquire it made failed with an error or ended unknown,
// none was granted, none refused because another client held the lock. It
// does not change a verdict; it says the run exercised fewer clients than
// it started. (A node-redis cluster client that kept a closed connection for
// the lock's slot failed 2,879 acquires with "The client is closed" in one
// run, and the race that run was for never had a second client to grant.)
type CutOffClient struct {
	Client   int    `json:"client"`
	Acquires int    `json:"acquires"`
	Error    string `json:"error"` // its first acquire's error
}

// reach is one client's acquires, counted in one group of keys.
type reach struct {
	acquires, answered int // answered: granted, or refused for another holder
	first              string
	firstAt            int64
}

// clientReach counts each client's acquires in ops.
func clientReach(ops []Op) map[int]*reach {
	m := map[int]*reach{}
	for i := range ops {
		o := &ops[i]
		if o.F != history.FAcquire {
			continue
		}
		r := m[o.Client]
		if r == nil {
			r = &reach{}
			m[o.Client] = r
		}
		r.acquires++
		switch {
		case o.Outcome == history.OK, o.Outcome == history.Fail && history.RefusalReason(o.Err) == "contention":
			r.answered++
		case r.firstAt == 0 || o.Call < r.firstAt:
			// The builder keeps a failure's words only; an unknown
			// outcome's are lost, and it is named "no answer".
			r.first, r.firstAt = "", o.Call
			if o.Outcome == history.Fail {
				r.first = o.Err
			}
		}
	}
	return m
}

// cutOff merges the groups' counts: the clients that made CutOffAfter
// acquires or more with none answered, in client order.
func cutOff(groups []map[int]*reach) []CutOffClient {
	all := map[int]*reach{}
	for _, g := range groups {
		for c, r := range g {
			a := all[c]
			if a == nil {
				a = &reach{}
				all[c] = a
			}
			a.acquires += r.acquires
			a.answered += r.answered
			if r.firstAt != 0 && (a.firstAt == 0 || r.firstAt < a.firstAt) {
				a.first, a.firstAt = r.first, r.firstAt
			}
		}
	}
	var out []CutOffClient
	for c, r := range all {
		if r.answered == 0 && r.acquires >= CutOffAfter {
			out = append(out, CutOffClient{Client: c, Acquires: r.acquires, Error: r.first})
		}
	}
	slices.SortFunc(out, func(a, b CutOffClient) int { return a.Client - b.Client })
	return out
}
