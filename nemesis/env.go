// Package nemesis injects faults into a running lockjepsen test: each fault has
// its heal, logs itself as history events (process "nemesis"), and is scheduled
// from a seed so that a run's schedule can be replayed exactly. Targets (the
// current primary, the current holder) are chosen when the fault fires.
package nemesis

import (
	"context"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// Holder is a client that holds a lock right now, as the history shows.
type Holder struct {
	Client int
	Key    string
	Token  string
	Since  int64 // true time of the acquire's ok
	// Renewed is the true time of its last successful extend; 0 before its
	// first renewal.
	Renewed int64
}

// The reasons by which the replication guard refuses an acquire, as
// history.RefusalReason names them: min-replicas-to-write's NOREPLICAS, and a
// WAIT or WAITAOF that got fewer acknowledgements than it asked for (the
// recipe gives the lock back and the acquire fails).
const (
	GuardNoReplicas = "noreplicas"
	GuardWait       = "wait"
	GuardWaitAOF    = "waitaof"
)

// Refusal is an acquire the replication guard refused, as the history shows.
type Refusal struct {
	Client  int
	Key     string
	Reason  string // GuardNoReplicas, GuardWait or GuardWaitAOF
	Error   string // the history's error text
	Invoked int64  // true time of the acquire's invoke
	Time    int64  // true time of its fail
}

// Env is what a fault acts on; the runner implements it.
type Env interface {
	Cluster() cluster.Runtime
	// Log records a nemesis event (Process, Type and Time are filled in).
	Log(e history.Event)
	// Holders lists the clients holding a lock now.
	Holders() []Holder
	// AwaitAcquire waits until some client's acquire returns ok after true time
	// `after`, and reports whether one did before ctx ended.
	AwaitAcquire(ctx context.Context, after int64) bool
	// AwaitGrant waits as AwaitAcquire does, and ends early at the first
	// acquire invoked after `after` that the replication guard refused for
	// one of the reasons in closing (GuardNoReplicas, GuardWait,
	// GuardWaitAOF): granted, or the refusal, or neither when ctx ended. A
	// grant seen together with a refusal wins: the guard let one through.
	AwaitGrant(ctx context.Context, after int64, closing []string) (granted bool, refused *Refusal)
	PauseClient(client int) error
	ResumeClient(client int) error
	// SkewClient sets a client's decision clock: offset added, rate multiplied.
	SkewClient(client int, offset time.Duration, rate float64) error
	TTL() time.Duration
	DownAfter() time.Duration
}
