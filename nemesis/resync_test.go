package nemesis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// forceFullSync on a real topology: the replica full-syncs from the primary
// and keeps its min-replicas-to-write, with or without that setting (under
// it the detached replica refused the diverging write, and every
// resync-window trial of those sweep cells ended with no verdict).
func TestForceFullSync(t *testing.T) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		t.Fatalf("find Valkey (run 'make setup'): %v", err)
	}
	cfg := cluster.Defaults()
	cfg.Dir = t.TempDir()
	cfg.MinReplicasToWrite = 1
	l, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		t.Fatal(err)
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
	p, err := l.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replica := replicasOf(l, p.Name)[0].Name
	for _, setting := range []string{"1", "0"} {
		t.Run("min-replicas-to-write "+setting, func(t *testing.T) {
			if _, err := l.Command(ctx, replica, "CONFIG", "SET", "min-replicas-to-write", setting); err != nil {
				t.Fatal(err)
			}
			before := fullSyncs(ctx, t, l, p.Name)
			if err := forceFullSync(ctx, l, replica, p.Addr); err != nil {
				t.Fatalf("forceFullSync: %v", err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for fullSyncs(ctx, t, l, p.Name) <= before {
				if time.Now().After(deadline) {
					t.Fatalf("%s did not full-sync from %s (sync_full stayed %d)", replica, p.Name, before)
				}
				time.Sleep(20 * time.Millisecond)
			}
			v, err := l.Command(ctx, replica, "CONFIG", "GET", "min-replicas-to-write")
			if err != nil {
				t.Fatal(err)
			}
			if _, got, _ := strings.Cut(v, "\n"); got != setting {
				t.Errorf("min-replicas-to-write on %s is %q after the resync, want %s", replica, got, setting)
			}
			inf, err := l.Command(ctx, replica, "INFO", "replication")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(inf, "role:slave") {
				t.Errorf("%s is no longer a replica:\n%s", replica, inf)
			}
		})
	}
}

// fullSyncs is the primary's sync_full counter (INFO stats).
func fullSyncs(ctx context.Context, t *testing.T, l *cluster.Local, primary string) int {
	t.Helper()
	s, err := l.Command(ctx, primary, "INFO", "stats")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := cluster.ParseInfo(s)["sync_full"]
	if !ok {
		t.Fatalf("no sync_full in INFO stats of %s", primary)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("sync_full:%s", v)
	}
	return n
}
