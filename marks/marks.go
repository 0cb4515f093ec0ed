// Package marks is the vocabulary of the fault events a history holds: which
// event begins a fault, which later event on the same node heals it, and what
// a violation inside it is blamed on, with each cause's rank and the sentence
// that tells a reader what happened.
//
// The faults own their marks (each catalog entry in nemesis/ names the events
// it logs) and register them here when the nemesis package is linked in; the
// readers of a history (the checker, the timeline, the metrics) look them up
// here. The package imports nothing but history, so those readers need no
// runtime: `go list -deps ./checker` holds no Docker, etcd, gRPC or
// valkey-go package (checker's TestCheckerIsALeaf).
package marks

import (
	"sort"
	"sync"

	"github.com/lockjepsen/lockjepsen/history"
)

// Mark is one fault event of the history: Event begins an interval that the
// later event Heal on the same node ends; violations inside it are blamed on
// Cause.
type Mark struct {
	Event, Heal, Cause string
	// Moment is the fault's dangerous moment, what a window must reach for
	// a valid verdict to mean the fault had its chance: MomentHeld (the
	// default), MomentGrant or MomentReply.
	Moment string
	// Revokes: the event ends the lock its Key and Token name, at its time,
	// as the server's contract says it does: a lock that lives and dies
	// with a session is released honestly when the server ends the session. The checker's lock tier reads such an event as the holder's
	// release (a grant after it is no double grant); the client learns of
	// it only at its next statement, which is what the fence is for.
	Revokes bool
}

// Dangerous moments (Mark.Moment).
const (
	// MomentHeld: a lease was certainly alive when the fault began, the
	// targeted client's own for a fault on a client. A kill, a pause, a
	// clock jump or a slot move that finds no holder can lose no lock.
	MomentHeld = "held"
	// MomentReply: the fault reached its client's operation in flight,
	// the command sent (history.Event.Reply on the operation's completion):
	// a cancel that came after the answer, or an operation the fault never
	// met, gave the library nothing to mishandle.
	MomentReply = "reply"
	// MomentGrant: a grant returned inside the window. The cut replication
	// links are harmless unless the primary grants a lock they do not carry.
	MomentGrant = "grant"
)

// MomentWords says what a window must show to reach moment, as the
// summary and the verdict's "not exercised" read it.
func MomentWords(moment string) string {
	switch moment {
	case MomentGrant:
		return "a grant inside it"
	case MomentReply:
		return "a call it reached in flight"
	}
	return "a lease alive when it began"
}

// MomentOf is the mark's moment with the default filled in.
func (m Mark) MomentOf() string {
	if m.Moment == "" {
		return MomentHeld
	}
	return m.Moment
}

// Client reports whether the mark's fault targets a client (its node names
// the client slot) rather than a server: its cause is a client's own doing.
func (m Mark) Client() bool {
	c, ok := LookupCause(m.Cause)
	return ok && c.Client
}

// Causes, from the server-side faults that can make a correct-looking server
// grant a lock twice to the client-side ones that only make a client outlive
// its lease.
const (
	CauseFastRestart       = "fast-restart"
	CauseReplicaClock      = "replica-clock"
	CauseFailover          = "failover"
	CauseSplitBrain        = "split-brain"
	CauseServerClock       = "server-clock"
	CauseReplication       = "replication"
	CauseClientPause       = "client-pause"
	CauseClientClock       = "client-clock"
	CauseDBRestart         = "db-restart"
	CauseNodeRestart       = "node-restart"
	CauseClientCrash       = "client-crash"
	CausePartialPartition  = "partial-partition"
	CauseMinorityPartition = "minority-partition" // some nodes cut off from every client
	CauseEviction          = "eviction"           // a node over maxmemory evicted a lock key
	CauseReshard           = "reshard"            // the lock key's slot moved between shards
	CauseNetwork           = "network"            // the primary's network slowed, stalled or reset (--net-proxy)
	CauseStarvedRenewals   = "starved-renewals"   // a holder's watchdog stalled while its job went on
	CauseReply             = "reply"              // a client's acquire or release lost its reply or was cancelled
)

// Cause is what a violation is blamed on: its rank among causes in force
// together (lower wins: the faults that can make a correct-looking server
// hand a lock out twice before those that only make a client outlive its
// lease), whether it is the client's own doing, and the sentence that tells
// a reader what happened.
type Cause struct {
	Name   string
	Rank   int
	Client bool
	// Text follows "It happened around ..." style; %s is where the faults
	// in force are named.
	Text string
}

var causes = []Cause{
	{CauseFastRestart, 0, false, "It happened around a fast restart%s: the primary came back empty, faster than any failover (before Sentinel noticed, or with no Sentinel at all), forgot the first grant and granted again."},
	{CauseReplicaClock, 1, false, "It happened after a failover to a replica whose wall clock ran ahead%s: the lock reached it as an absolute expiry time (SET ... PX travels as PXAT), so on its clock the lease was already over and it granted the lock again."},
	{CauseFailover, 2, false, "It happened around a failover%s: the promoted replica never received the first grant, so it handed the lock out again."},
	{CauseSplitBrain, 3, false, "It happened while a primary was paused or cut off, or left serving after a failover%s: two nodes acted as primary and each granted the lock (split brain)."},
	{CauseServerClock, 4, false, "It happened around a server clock change%s: the server's clock jumped, so the first lease expired early."},
	{CauseReplication, 5, false, "It happened while the replicas were paused%s: writes were acknowledged that no replica had copied."},
	{CauseClientPause, 6, true, "The first client had been paused%s longer than its lease, so its lease expired honestly while it still believed it held the lock."},
	{CauseClientClock, 7, true, "The first client's clock was skewed%s, so it believed its lease lasted longer than it did."},
	{CauseDBRestart, 8, false, "It happened around a restart of the resource's database%s."},
	{CauseNodeRestart, 0, false, "It happened around a node restart%s: the node came back without the lock it had granted (no persistence), so another client found a majority free."},
	{CausePartialPartition, 9, false, "It happened while the clients reached different majorities of the nodes%s."},
	{CauseClientCrash, 10, true, "A client crashed%s in the middle of its lock's life."},
	{CauseEviction, 5, false, "It happened while the primary was over its maxmemory%s: the lock key, which has an expire like every lock key, was evicted (the eviction's DEL reached the replicas too), so the lock was free to grant again, with no failover at all."},
	{CauseReshard, 2, false, "It happened while the lock key's slot moved between Valkey Cluster shards%s: during the move two nodes could each answer for the key, so the one that did not hold the first grant handed the lock out again."},
	{CauseNetwork, 6, false, "It happened while the primary's network was slowed, stalled or reset%s: replies arrived late or never, so a client may have acted on a lease it measured from the wrong moment."},
	{CauseStarvedRenewals, 7, true, "The first client's watchdog was starved%s: its renewals stalled past the TTL while its job went on, so its lease expired on the server while it still believed it held the lock."},
	{CauseReply, 7, true, "A client's acquire or release ran on the server while its reply was lost or its call cancelled%s, so the client acted on what its library made of a reply it never read."},
	{CauseMinorityPartition, 9, false, "It happened while a minority of the nodes was cut off from every client%s: the others still formed a majority, so a grant there should have been refused while the first lease lived."},
}

// RegisterCause adds a cause that a fault declared outside the nemesis
// package blames (a deployment's own, in its folder); a name registered twice is a
// programming error.
func RegisterCause(c Cause) {
	mu.Lock()
	defer mu.Unlock()
	for _, o := range causes {
		if o.Name == c.Name {
			panic("marks: cause " + c.Name + " registered twice")
		}
	}
	causes = append(causes, c)
}

// LookupCause finds a cause by name; false for "none", "unknown" and names
// no fault gives.
func LookupCause(name string) (Cause, bool) {
	for _, c := range causes {
		if c.Name == name {
			return c, true
		}
	}
	return Cause{}, false
}

var (
	mu       sync.RWMutex
	byEvent  = map[string]Mark{}
	recorded bool
)

// Register adds a fault's marks. Faults share events (every failover fault
// logs "kill"); the first registration of an event wins, and nemesis's
// TestMarksAgree holds the catalog to one meaning per event.
func Register(ms ...Mark) {
	mu.Lock()
	defer mu.Unlock()
	recorded = true
	for _, m := range ms {
		if _, dup := byEvent[m.Event]; !dup {
			byEvent[m.Event] = m
		}
	}
}

// Registered reports whether any fault registered its marks: false in a
// program that reads histories without linking the nemesis in, where every
// fault event would go unrecognised.
func Registered() bool {
	mu.RLock()
	defer mu.RUnlock()
	return recorded
}

// Of is the mark an event name begins; false when the event begins no fault.
func Of(event string) (Mark, bool) {
	mu.RLock()
	defer mu.RUnlock()
	m, ok := byEvent[event]
	return m, ok
}

// All lists every mark, sorted by event name.
func All() []Mark {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Mark, 0, len(byEvent))
	for _, m := range byEvent {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out
}

// CauseOf is the cause a fault event (or the failover observation, a point
// blamed on CauseFailover) stands for; "unknown" for an event that is
// neither.
func CauseOf(event string) string {
	if event == history.NFailover {
		return CauseFailover
	}
	if m, ok := Of(event); ok {
		return m.Cause
	}
	return "unknown"
}
