// Package history defines lockjepsen's event log: the JSON-lines record of every
// operation the clients attempted, every fault the nemesis injected, and how each
// ended. The schema is documented in docs/history.md.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Type is an event's place in an operation's life, as in Jepsen.
type Type string

const (
	Invoke Type = "invoke" // the operation was sent (or is about to be)
	OK     Type = "ok"     // it definitely took effect
	Fail   Type = "fail"   // it definitely did not take effect
	Info   Type = "info"   // outcome unknown (timeout, lost connection), or a nemesis note
)

// Client operation names.
const (
	FAcquire = "acquire"
	FExtend  = "extend"
	FRelease = "release"
	FRead    = "read"
	FWrite   = "write"
	// FFence is a holder asking the resource for a fence number right after its
	// grant (--fence-source resource): the number is not part of the lock
	// service's reply, so it is an operation of its own.
	FFence = "fence"
)

// Fence sources, the fence_source field: where a fence number came from.
const (
	FenceValkey   = "valkey"    // INCR fence:{name} in the acquire's MULTI
	FenceResource = "resource"  // POST /v1/fence: the resource database's own sequence
	FenceLeaseRow = "lease-row" // recipe sql-lease: the lock row's counter, raised by the granting UPDATE
	// A recipe with a deployment of its own declares its source beside its
	// code, in its file of package lock.
)

// Process identifies who performed an event. Client processes are numbered from
// 0; after an operation with an unknown outcome a client continues under a new
// number, so that every process has at most one operation in flight (Jepsen's
// rule, which porcupine's models rely on). The nemesis is the special process
// "nemesis".
type Process int

// Nemesis is the process of fault-injection events.
const Nemesis Process = -1

func (p Process) String() string {
	if p == Nemesis {
		return "nemesis"
	}
	return strconv.Itoa(int(p))
}

// MarshalJSON writes clients as numbers and the nemesis as "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// UnmarshalJSON accepts a non-negative number or "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = Nemesis
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil || n < 0 {
		return fmt.Errorf("process must be a non-negative integer or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

// Event is one line of history.jsonl. Fields beyond index, time, process, type
// and f are optional and depend on f; see docs/history.md.
type Event struct {
	Index   int64   `json:"index"`
	Time    int64   `json:"time"` // true time: CLOCK_MONOTONIC nanoseconds
	Process Process `json:"process"`
	Type    Type    `json:"type"`
	F       string  `json:"f"`

	// Client fields.
	Client int    `json:"client,omitempty"` // stable client slot (OS process) behind Process; rows in plots
	Key    string `json:"key,omitempty"`    // lock key, e.g. lock:{job-1}
	Token  string `json:"token,omitempty"`  // the acquisition's random token
	TTLMs  int64  `json:"ttl_ms,omitempty"` // lease asked for on acquire/extend
	Fence  int64  `json:"fence,omitempty"`  // fencing token (acquire ok or fence ok; read/write presented)
	// FenceSource says where the number on an acquire ok or a fence ok came
	// from (FenceValkey, FenceResource, FenceLeaseRow). Optional: absent on
	// histories written before it existed, where a fence came from Valkey.
	FenceSource string `json:"fence_source,omitempty"`
	Value       *int64 `json:"value,omitempty"` // read: value seen; write: value written
	Node        string `json:"node,omitempty"`  // node the op was sent to, or nemesis target
	Error       string `json:"error,omitempty"` // error text for fail/info
	// ValidityMs is a Redlock recipe's validity on an acquire or extend ok:
	// TTL − elapsed − drift, the lease the client may use.
	ValidityMs int64 `json:"validity_ms,omitempty"`
	// Expiry on an acquire or extend: ExpiryNone when the lock server never
	// expires the lock (PostgreSQL's advisory locks live until unlock or the
	// session's end), so TTLMs is the client's own lease and no server's.
	// Absent: the server expires the lock after TTLMs.
	Expiry string `json:"expiry,omitempty"`
	// Verdict is the resource's answer to a read or write: accepted or rejected.
	Verdict string `json:"verdict,omitempty"`
	// Reply on an acquire's or release's completion: the reply fault that
	// reached the operation in flight (ReplyCancel, ReplyDrop), the command
	// having been sent: what the cancel-*/drop-* faults' coverage counts.
	// Absent when no fault was armed, or the operation ended before it
	// could act (a program that answered before its cancel went out).
	Reply string `json:"reply,omitempty"`

	// Nemesis fields.
	Role   string `json:"role,omitempty"`   // target's role when the fault began (primary, replica, client)
	Detail string `json:"detail,omitempty"` // free text: offsets, durations, what was observed
}

// The reply faults that can reach an operation (Event.Reply).
const (
	ReplyCancel = "cancel"
	ReplyDrop   = "drop"
)

// ExpiryNone is Expiry's one value: the lock server never expires the lock.
const ExpiryNone = "none"

// IsClient reports whether the event came from a lock client.
func (e *Event) IsClient() bool { return e.Process != Nemesis }

// Int64 is a helper for the optional Value field.
func Int64(v int64) *int64 { return &v }
