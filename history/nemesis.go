package history

// Nemesis events are written with Process Nemesis and type Info. A fault is an
// event whose F is one of the keys below; its heal is a later event whose F is
// the matching value, on the same Node (or client, for client faults). The
// interval between them is when the fault was in force. "failover" is an
// observation, not a fault: Sentinel promoted Node.
const (
	NFailover = "failover" // observed: Node is the new primary (Detail names the old one)
)

// FaultHeals maps each fault to the event that ends it.
var FaultHeals = map[string]string{
	"kill":            "restart",          // SIGKILL of a node; restart brings it back as a replica
	"pause-node":      "resume-node",      // SIGSTOP/SIGCONT of a Valkey node (split brain when a primary)
	"cut-replication": "heal-replication", // replicas paused and links dropped
	"resync-window":   "resync-done",      // replica forced into full resync; lock taken in the window
	"fast-restart":    "restarted",        // primary killed and restarted before Sentinel notices
	"pause-replicas":  "resume-replicas",  // every replica SIGSTOPped, no kill
	"clock-bump":      "clock-reset",      // server wall clock offset via libfaketime
	"clock-strobe":    "clock-reset",      // server wall clock flipping between offsets
	"pause-client":    "resume-client",    // SIGSTOP of a lock client process past its TTL
	"skew-client":     "unskew-client",    // client decision clock offset/rate
	"partition":       "heal-partition",   // node cut off from the network (docker runtime)
}

// Cause names the kind of fault a violation is attributed to.
func Cause(fault string) string {
	switch fault {
	case "kill", "cut-replication", "resync-window", NFailover:
		return "failover"
	case "fast-restart":
		return "fast-restart"
	case "pause-replicas":
		return "replication"
	case "pause-node", "partition":
		return "split-brain"
	case "clock-bump", "clock-strobe":
		return "server-clock"
	case "pause-client":
		return "client-pause"
	case "skew-client":
		return "client-clock"
	}
	return "unknown"
}
