package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// HeldSpan is the span of a fault held for its step's duration: that and a
// second for its heal.
func HeldSpan(s Step, _ PlanParams) time.Duration { return s.Duration + time.Second }

// catalog is every fault, in the order docs/faults.md lists them; each entry
// is declared beside its code, in the file of its mechanism. The network
// faults (network.go) join at the end, and a deployment's own faults
// (declared in its folder under deployments/) after them, by Register.
var catalog = append([]*Fault{
	faultKillPrimary, faultCutReplication, faultResyncWindow, faultPauseReplicas,
	faultClockStrobe, faultFastRestart, faultFailoverCoordinated,
	faultMemoryPressure, faultMemoryPressureDedicated, faultPausePrimary,
	faultPauseClient, faultClockBump, faultSkewClient, faultStarveRenewals, faultPartition,
	faultCrashClient, faultKillHolder,
	faultCancelAcquire, faultCancelRelease, faultDropReleaseReply,
	faultReplicaClockAhead, faultReplicaClockBehind, faultRestartDB,
}, networkFaults...)

// Run executes one step; it returns once the fault is healed.
func Run(ctx context.Context, env Env, s Step) error {
	f, err := Lookup(s.Fault)
	if err != nil {
		return err
	}
	if err := f.Inject(ctx, env, s); err != nil {
		return fmt.Errorf("fault %s: %w", s.Fault, err)
	}
	return nil
}

// Logf logs one fault event of the run: what a fault did, to which node in
// which role (a deployment's own faults log through it too).
func Logf(env Env, f, node string, role cluster.Role, format string, a ...any) {
	env.Log(history.Event{F: f, Node: node, Role: string(role), Detail: fmt.Sprintf(format, a...)})
}

// Sleep waits d, or until ctx ends (its error then): how a fault holds its
// window, in this package and in a deployment's own faults.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Register adds faults declared outside this package, beside the code of
// the deployment they act on (in its folder under deployments/): they join the catalog
// after the built-in ones, with their marks. A name registered twice is a
// programming error.
func Register(fs ...*Fault) {
	for _, f := range fs {
		if _, err := Lookup(f.Name); err == nil {
			panic("nemesis: fault " + f.Name + " registered twice")
		}
		catalog = append(catalog, f)
	}
}
