package cluster

import (
	"context"
	"fmt"
	"time"
)

// FailoverTiming is what one SIGKILL of the primary cost.
type FailoverTiming struct {
	Writable   time.Duration // until some other node accepted a write as primary
	Advertised time.Duration // until a majority of Sentinels named the new primary
}

// MeasureFailover SIGKILLs the current primary and times how long until another
// node accepts writes and until Sentinel advertises it, then restarts the old
// primary as a replica and waits for the cluster to be ready again. It works on
// any runtime.
func MeasureFailover(ctx context.Context, l Runtime) (FailoverTiming, error) {
	var ft FailoverTiming
	old, err := l.Primary(ctx)
	if err != nil {
		return ft, err
	}
	start := time.Now()
	if err := l.Kill(old.Name); err != nil {
		return ft, err
	}
	advertised := make(chan error, 1)
	go func() {
		_, err := l.WaitFailover(ctx, old.Name)
		ft.Advertised = time.Since(start)
		advertised <- err
	}()
	for ft.Writable == 0 {
		for _, n := range l.Nodes() {
			if n.Watches() || n.Name == old.Name || n.PID == 0 {
				continue
			}
			// A replica answers READONLY; only a promoted node says OK.
			if s, err := l.Command(ctx, n.Name, "SET", "lockjepsen:probe", "1"); err == nil && s == "OK" {
				ft.Writable = time.Since(start)
				break
			}
		}
		if ctx.Err() != nil {
			return ft, fmt.Errorf("no node became writable: %w", ctx.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := <-advertised; err != nil {
		return ft, err
	}
	if err := l.Restart(ctx, old.Name, AsReplica); err != nil {
		return ft, err
	}
	return ft, l.WaitReady(ctx)
}
