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
	// Again is the node the deployment made primary on its own within the
	// watch after the new one was named, with no second kill ("" if none).
	// Sentinel at down-after 1 s does that after some kills: see
	// deployments/sentinel/watcher.go.
	Again string
}

// AgainWithin is long enough a watch for a second failover: down-after, a
// vote, the promotion and the switch fit in it.
const AgainWithin = 6 * time.Second

// MeasureFailover SIGKILLs the current primary and times how long until another
// node accepts writes and until Sentinel advertises it, then restarts the old
// primary as a replica, watches for `watch` for a failover nobody drove
// (none when 0), and waits for the cluster to be ready again. It works on any
// runtime.
func MeasureFailover(ctx context.Context, l Runtime, watch time.Duration) (FailoverTiming, error) {
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
	var np Node
	go func() {
		var err error
		np, err = l.WaitFailover(ctx, old.Name)
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
	// WaitReady would see only the end of a second failover; watch for it
	// first, as the run's watcher does, so that it is counted.
	if watch > 0 {
		again, err := PollUntil(ctx, watch, "a second failover", func(c context.Context) (Node, error) {
			p, err := l.Primary(c)
			if err == nil && p.Name == np.Name {
				err = fmt.Errorf("%s still primary", np.Name)
			}
			return p, err
		})
		if err == nil {
			ft.Again = again.Name
		} else if ctx.Err() != nil {
			return ft, ctx.Err()
		}
	}
	return ft, l.WaitReady(ctx)
}
