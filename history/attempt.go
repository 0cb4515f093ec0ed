package history

// Attempt is one line of resource.jsonl: the fenced resource's own record of a
// read or write it was asked to do, stamped on arrival with true time. It is the
// server-side view; the client-side view of the same operation is a read or write
// Event in history.jsonl.
type Attempt struct {
	Time      int64  `json:"time"`       // CLOCK_MONOTONIC ns when the resource decided
	Op        string `json:"op"`         // read | write
	RunID     string `json:"run_id"`     // the row; the lock key's name, e.g. job-1 for lock:{job-1}
	Client    int    `json:"client"`     // client slot
	Process   int    `json:"process"`    // client process id in the history
	Token     string `json:"token"`      // lock token presented
	Fence     int64  `json:"fence"`      // fence presented (0 when none)
	Value     int64  `json:"value"`      // read: value returned; write: value asked to write
	Verdict   string `json:"verdict"`    // accepted | rejected
	Reason    string `json:"reason"`     // why rejected, in words: older fence, same fence from another holder
	LastFence int64  `json:"last_fence"` // last_fence after the decision
	Mode      string `json:"mode"`       // none | write | read-write
}

// Resource verdicts.
const (
	Accepted = "accepted"
	Rejected = "rejected"
)
