// Package marks is the vocabulary of the fault events a history holds: which
// event begins a fault, which later event on the same node heals it, and what
// a violation inside it is blamed on, with each cause's rank and the sentence
// that tells a reader what happened.
//
// The faults own their marks (each catalog entry in nemesis/ names the events
// it logs); a reader of a history (the checker, the timeline, the metrics,
// shrink) is handed them as a Catalog by whoever ran the faults
// (nemesis.Catalog), never through a registry filled behind its back. The
// package imports nothing but history, so those readers need no runtime:
// `go list -deps ./checker` holds no Docker, etcd, gRPC or valkey-go package
// (checker's TestCheckerIsALeaf).
package marks

import (
	"sort"

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

// Causes are the causes every catalog knows, the faults in nemesis/ blame;
// a deployment in its own folder adds its own (nemesis.RegisterCause).
var Causes = []Cause{
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

// Catalog is the vocabulary a history is read with: which event begins a
// fault and which heals it, and the causes those faults blame. The program
// that ran the faults hands it to the readers (nemesis.Catalog); a nil or
// empty Catalog knows no fault, and Causes only.
type Catalog struct {
	byEvent map[string]Mark
	causes  []Cause
}

// NewCatalog holds the marks and, beside Causes, the extra causes given.
// Faults share events (every failover fault logs "kill"): the first mark
// of an event wins, and nemesis's TestMarksAgree holds its catalog to one
// meaning per event.
func NewCatalog(ms []Mark, extra []Cause) *Catalog {
	c := &Catalog{byEvent: map[string]Mark{}, causes: append(append([]Cause{}, Causes...), extra...)}
	for _, m := range ms {
		if _, dup := c.byEvent[m.Event]; !dup {
			c.byEvent[m.Event] = m
		}
	}
	return c
}

// Empty reports whether the catalog knows no fault: a reader handed none
// would read every fault event as no fault at all.
func (c *Catalog) Empty() bool { return c == nil || len(c.byEvent) == 0 }

// Of is the mark an event name begins; false when the event begins no fault.
func (c *Catalog) Of(event string) (Mark, bool) {
	if c == nil {
		return Mark{}, false
	}
	m, ok := c.byEvent[event]
	return m, ok
}

// All lists every mark, sorted by event name.
func (c *Catalog) All() []Mark {
	if c == nil {
		return nil
	}
	out := make([]Mark, 0, len(c.byEvent))
	for _, m := range c.byEvent {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out
}

// LookupCause finds a cause by name; false for "none", "unknown" and names
// no fault gives.
func (c *Catalog) LookupCause(name string) (Cause, bool) {
	causes := Causes
	if c != nil {
		causes = c.causes
	}
	for _, x := range causes {
		if x.Name == name {
			return x, true
		}
	}
	return Cause{}, false
}

// Client reports whether a mark's fault targets a client (its node names
// the client slot) rather than a server: its cause is a client's own doing.
func (c *Catalog) Client(m Mark) bool {
	x, ok := c.LookupCause(m.Cause)
	return ok && x.Client
}

// CauseOf is the cause a fault event (or the failover observation, a point
// blamed on CauseFailover) stands for; "unknown" for an event that is
// neither.
func (c *Catalog) CauseOf(event string) string {
	if event == history.NFailover {
		return CauseFailover
	}
	if m, ok := c.Of(event); ok {
		return m.Cause
	}
	return "unknown"
}
