// Package clustertest starts a real local Valkey cluster for a test package's
// TestMain. It never skips: CI must have Valkey 9 (make setup). It names no
// deployment: a test package links in the one it starts (the default, or
// the topology its mutate names), as a user's binary does.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

// Start brings up a default topology in a fresh temporary directory, under
// an end-to-end test slot held for the whole package (testslot.Package). The
// returned stop tears it down, removes the directory and gives the slot back.
func Start(name string) (_ *cluster.Local, _ func(), err error) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		return nil, nil, err
	}
	release, err := testslot.Package()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
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
	return l, func() { l.Down(); os.RemoveAll(dir); release() }, nil
}

// Up brings up the default topology, changed by mutate, in t's temporary
// directory for one test, and takes it down when the test ends.
func Up(t testing.TB, mutate func(*cluster.Config)) *cluster.Local {
	t.Helper()
	bins, err := cluster.FindBinaries()
	if err != nil {
		t.Fatalf("find Valkey (run 'make setup'): %v", err)
	}
	cfg := cluster.Defaults()
	cfg.Dir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	l, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Down(); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return l
}
