package history

// Nemesis events are written with Process Nemesis and type Info. Which event
// names begin a fault, which event heals it and what it causes belong to the
// faults themselves (nemesis.Fault's marks). "failover" is an observation, not
// a fault: Sentinel promoted Node.
const (
	NFailover = "failover" // observed: Node is the new primary (Detail names the old one)
	// NClosedBySetting is an observation too: a fault waiting for a grant
	// that its own condition leaves to the replication guard (the replicas
	// cut off, or all in a resync window) saw the guard refuse one
	// (NOREPLICAS, a WAIT or WAITAOF short of acknowledgements) and stopped
	// waiting: the setting refused the very grant whose loss the fault
	// tests. Node is the primary, Key and Client the refused acquire's,
	// Detail the refusal.
	NClosedBySetting = "closed-by-setting"
	// NAuditPTTL is the runner's end-of-run audit of one lock key on one
	// node: Key, Node, and Value = the PTTL in ms (-1: no expiry, -2: no key).
	NAuditPTTL = "audit-pttl"
	// NClientExited: a client process ended by a signal that no fault of
	// the schedule sent (the OOM killer, an operator's kill): Node names the
	// client (client-N), Detail the signal. The run goes on without it, as
	// after kill-holder; its open operations stay unknown.
	NClientExited = "client-exited"
	// NEvicted is an observation of the memory-pressure faults: the lock's
	// primary, over its maxmemory, published that it evicted Key (a
	// keyspace notification, logged as it arrived, so a moment after the
	// eviction). Node is the primary. The checker looks for it before it
	// says a lock was lost to eviction.
	NEvicted = "evicted"
	// NStalePrimary and NStalePrimaryDemoted are observations that make a
	// window: a failover no fault drove (a network fault dropping Sentinel's
	// links, Sentinel re-running a failover) leaves the old primary, alive,
	// serving writes as a primary until Sentinel demotes it, ~10 s later on
	// loopback. Node is the old primary; the window ends when it reports role
	// slave, or no longer answers.
	NStalePrimary        = "stale-primary"
	NStalePrimaryDemoted = "stale-primary-demoted"
)
