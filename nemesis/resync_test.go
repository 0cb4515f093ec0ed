package nemesis

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/cluster/clustertest"
	_ "github.com/lockjepsen/lockjepsen/deployments/sentinel" // the default deployment these tests start
	"github.com/lockjepsen/lockjepsen/history"
)

// forceFullSync on a real topology: the replica full-syncs from the primary
// and keeps its min-replicas-to-write, with or without that setting (under
// it the detached replica refused the diverging write, and every
// resync-window trial of those sweep cells ended with no verdict).
func TestForceFullSync(t *testing.T) {
	l := clustertest.Up(t, func(c *cluster.Config) { c.MinReplicasToWrite = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
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

// failingOver is a runtime whose primary changes once a replica's resync
// step is refused: Sentinel failing the busy primary over mid-resync.
type failingOver struct {
	cluster.Runtime // nil: only the methods below are called
	Env             // nil: likewise
	primary         string
	silent          bool // the resync's steps succeed; the failover shows only in Primary
	events          []history.Event
}

func (f *failingOver) Cluster() cluster.Runtime { return f }
func (f *failingOver) Log(e history.Event)      { f.events = append(f.events, e) }
func (f *failingOver) Nodes() []cluster.Node {
	return []cluster.Node{{Name: "valkey-0", PID: 1}, {Name: "valkey-1", PID: 2}}
}
func (f *failingOver) Primary(context.Context) (cluster.Node, error) {
	return cluster.Node{Name: f.primary, Addr: "127.0.0.1:1", PID: 1}, nil
}
func (f *failingOver) Command(_ context.Context, node string, args ...string) (string, error) {
	switch {
	case args[0] == "SET" && f.silent:
		f.primary = "valkey-1"
	case args[0] == "SET":
		f.primary = "valkey-1"
		return "", errors.New("READONLY You can't write against a read only replica.")
	case args[0] == "INFO":
		return "role:slave\nmaster_link_status:up", nil // the window missed: resync again
	}
	return "min-replicas-to-write\n0", nil
}

// A failover in the middle of the resyncs is logged as one the fault did not
// drive, and the fault ends without its kill rather than ending the trial; a
// refusal with the primary unchanged is still an error.
func TestResyncWindowFailoverMidResync(t *testing.T) {
	for _, silent := range []bool{false, true} {
		f := &failingOver{primary: "valkey-0", silent: silent}
		if err := runResyncWindow(context.Background(), f, Step{}); err != nil {
			t.Fatalf("silent %v: runResyncWindow: %v, want the fault to end without an error", silent, err)
		}
		var fs []string
		for _, e := range f.events {
			fs = append(fs, e.F)
		}
		// No kill: the primary it would have killed is no longer the one.
		if want := []string{"resync-window", history.NFailover}; !slices.Equal(fs, want) {
			t.Fatalf("silent %v: events %v, want %v", silent, fs, want)
		}
		if e := f.events[1]; e.Node != "valkey-1" || !strings.Contains(e.Detail, "did not drive") || !strings.Contains(e.Detail, "valkey-0") {
			t.Errorf("silent %v: failover event %+v: want valkey-1 promoted, not driven by the fault, valkey-0 named", silent, e)
		}
	}
	same := &failingOver{primary: "valkey-0"}
	stay := &stayingPrimary{failingOver: same}
	if err := runResyncWindow(context.Background(), stay, Step{}); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("a refusal with the primary unchanged: %v, want the READONLY error", err)
	}
}

// stayingPrimary refuses the resync's write but keeps its primary.
type stayingPrimary struct{ *failingOver }

func (s *stayingPrimary) Cluster() cluster.Runtime { return s }
func (s *stayingPrimary) Command(_ context.Context, node string, args ...string) (string, error) {
	if args[0] == "SET" {
		return "", errors.New("READONLY You can't write against a read only replica.")
	}
	return "min-replicas-to-write\n0", nil
}
