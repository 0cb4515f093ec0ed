package history

// Nemesis events are written with Process Nemesis and type Info. Which event
// names begin a fault, which event heals it and what it causes belong to the
// faults themselves (nemesis.Fault's marks). "failover" is an observation, not
// a fault: Sentinel promoted Node.
const (
	NFailover = "failover" // observed: Node is the new primary (Detail names the old one)
	// NAuditPTTL is the runner's end-of-run audit of one lock key on one
	// node: Key, Node, and Value = the PTTL in ms (-1: no expiry, -2: no key).
	NAuditPTTL = "audit-pttl"
	// NClientExited: a client process ended by a signal that no fault of
	// the schedule sent (the OOM killer, an operator's kill): Node names the
	// client (client-N), Detail the signal. The run goes on without it, as
	// after kill-holder; its open operations stay unknown.
	NClientExited = "client-exited"
)
