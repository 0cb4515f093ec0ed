package resource

import (
	"context"
	"errors"

	"github.com/lockjepsen/lockjepsen/history"
)

// Operations, as in history.Attempt.Op.
const (
	OpRead  = "read"
	OpWrite = "write"
)

// Holder is who presents an operation: the lock's run, the client, and the
// token and fence it got from acquire.
type Holder struct {
	RunID   string // the row; the lock key's name, e.g. job-1 for lock:{job-1}
	Client  int    // client slot (OS process)
	Process int    // process number in the history
	Token   string // lock token of this acquisition
	Fence   int64  // fence from INCR fence:{name}; 0 when the recipe has none
}

// Reply is the resource's answer to a read or write. Value and LastFence are the
// row's state right after the decision, whatever the verdict.
type Reply struct {
	Verdict   string `json:"verdict"`          // history.Accepted or history.Rejected
	Value     int64  `json:"value"`            // the row's value
	LastFence int64  `json:"last_fence"`       // the row's last_fence
	Reason    string `json:"reason,omitempty"` // why, in workshop words; empty for a plain accept
	Mode      Mode   `json:"mode"`
}

// Accepted reports whether the operation took effect.
func (r Reply) Accepted() bool { return r.Verdict == history.Accepted }

// Row is a run's stored state.
type Row struct {
	RunID     string `json:"run_id"`
	Value     int64  `json:"value"`
	Status    string `json:"status"`
	LastFence int64  `json:"last_fence"`
	LastToken string `json:"last_token"`
}

// Resource is what a critical section talks to; Store (embedded) and Client
// (HTTP) both implement it.
type Resource interface {
	Read(ctx context.Context, h Holder) (Reply, error)
	Write(ctx context.Context, h Holder, value int64) (Reply, error)
}

// ErrUnknownRun is returned (wrapped) for a run that was never created. Rows are
// created by an explicit init (Store.InitRun, POST /v1/runs, serve --run), not on
// first use, so that a typo in a run name is an error instead of a fresh row.
var ErrUnknownRun = errors.New("unknown run")

// InputError is bad input: a missing or malformed field. Nothing was changed and
// nothing was logged.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func badInput(msg string) error { return &InputError{Msg: msg} }
