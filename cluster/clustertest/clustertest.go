// Package clustertest starts a real local Valkey cluster for a test package's
// TestMain. It never skips: CI must have Valkey 9 (make setup).
package clustertest

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// Start brings up a default topology in a fresh temporary directory. The
// returned stop tears it down and removes the directory.
func Start(name string) (*cluster.Local, func(), error) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "lockjepsen-"+name+"-test-")
	if err != nil {
		return nil, nil, err
	}
	cfg := cluster.Defaults()
	cfg.Dir = dir
	l, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	// A loaded 2-core machine can miss the readiness wait; one more try beats
	// a red build for a slow start.
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = l.Up(ctx)
		cancel()
		if err == nil {
			break
		}
		l.Down()
		if attempt == 2 {
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("cluster up: %w", err)
		}
		fmt.Fprintln(os.Stderr, "cluster up failed, retrying:", err)
	}
	return l, func() { l.Down(); os.RemoveAll(dir) }, nil
}
