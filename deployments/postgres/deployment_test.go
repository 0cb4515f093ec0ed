package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// Bad input is refused before anything starts, naming the value and the
// fix: a pooler mode PgBouncer lacks here, --pooler on a deployment without
// one, a PostgreSQL older than 15, a pgbouncer that is not there, a runtime
// the deployment has none for, a pooler fault without a pooler.
func TestRefusals(t *testing.T) {
	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "postgres"), []byte("#!/bin/sh\necho 'postgres (PostgreSQL) 14.11'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := func(topology, pooler string) cluster.Config {
		c := cluster.Defaults()
		c.Topology = topology
		if pooler != "" {
			c.SetOpt("pooler", pooler)
		}
		return c
	}
	cases := []struct {
		name string
		env  map[string]string
		cfg  cluster.Config
		want []string
	}{
		{"statement mode", nil, cfg(Topology, "statement"), []string{`--pooler "statement"`, "none, session, transaction"}},
		{"a pooler on Sentinel's deployment", nil, cfg("sentinel", "session"), []string{"--pooler session", "--topology postgres", "drop --pooler"}},
		{"PostgreSQL 14", map[string]string{"LOCKJEPSEN_PG_BIN": old}, cfg(Topology, ""), []string{"PostgreSQL 14", "15 or newer"}},
		{"no pgbouncer", map[string]string{"LOCKJEPSEN_PGBOUNCER_BIN": "/nonexistent/pgbouncer"}, cfg(Topology, "session"), []string{`"/nonexistent/pgbouncer"`, "make setup"}},
		{"docker", nil, func() cluster.Config { c := cfg(Topology, ""); c.Runtime = "docker"; return c }(), []string{"--runtime docker", "local only"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			err := c.cfg.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
		})
	}
	if err := faultPausePooler.Available(cfg(Topology, PoolerNone)); err == nil || !strings.Contains(err.Error(), "--pooler session") {
		t.Errorf("pause-pooler without a pooler: %v", err)
	}
	if err := faultPausePooler.Available(cfg(Topology, PoolerTransaction)); err != nil {
		t.Errorf("pause-pooler with a pooler: %v", err)
	}
	if _, err := nemesis.Lookup("pg-terminate-holder"); err != nil {
		t.Errorf("the catalog lacks the deployment's faults: %v", err)
	}
}

// The runtime end to end: real postmasters and PgBouncer, started, frozen,
// promoted, killed and restarted, and gone at Down with their data folder.
func TestRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	testslot.Parallel(t)
	c := cluster.Defaults()
	c.Topology, c.Dir = Topology, t.TempDir()
	c.SetOpt("pooler", PoolerSession)
	rt, err := cluster.New(c, cluster.Binaries{})
	if err != nil {
		t.Fatal(err)
	}
	r := rt.(*Runtime)
	ctx := context.Background()
	defer r.Down()
	if err := r.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := r.Primary(ctx); err != nil || p.Name != nodePrimary {
		t.Fatalf("primary %v %v, want %s", p.Name, err, nodePrimary)
	}

	// A session lock through the pooler is visible in pg_locks with the
	// client's application name: what the terminate fault finds it by.
	cc, _ := pgx.ParseConfig(r.DSN())
	cc.RuntimeParams["application_name"] = lock.ApplicationName(7)
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lock.AdvisoryKey("lock:{job-1}")).Scan(&got); err != nil || !got {
		t.Fatalf("lock: %v %v", got, err)
	}
	hs, err := r.holders(ctx)
	if err != nil || len(hs) != 1 || hs[0].client != 7 || hs[0].key != lock.AdvisoryKey("lock:{job-1}") {
		t.Fatalf("holders %+v %v, want client 7 on lock:{job-1}", hs, err)
	}

	// Frozen, the primary answers nothing, its backends included.
	if err := r.Pause(nodePrimary); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = conn.QueryRow(qctx, "SELECT 1").Scan(new(int))
	cancel()
	if err == nil {
		t.Fatal("a session on the frozen primary answered")
	}
	if err := r.promote(ctx, nodeReplica); err != nil {
		t.Fatal(err)
	}
	if p, err := r.Primary(ctx); err != nil || p.Name != nodeReplica {
		t.Fatalf("primary after promotion %v %v, want %s", p.Name, err, nodeReplica)
	}
	// The promoted replica has none of the old primary's advisory locks,
	// and the repointed pooler leads a new session there.
	conn2, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	if err := conn2.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lock.AdvisoryKey("lock:{job-1}")).Scan(&got); err != nil || !got {
		t.Fatalf("the promoted replica refused the lock: %v %v", got, err)
	}
	if err := r.Kill(nodePrimary); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(ctx, nodePrimary, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := r.Kill(nodePooler); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(ctx, nodePooler, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after the old primary rejoined: %v", err)
	}

	data := r.data
	if err := r.Down(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the data folder %s outlived Down: %v", data, err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, err := os.ReadFile(f); err == nil && (strings.Contains(string(b), data) || strings.Contains(string(b), c.Dir)) {
			t.Errorf("a process outlived Down (%s): %s", f, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}

// TestNoBackendOutlivesAPause: a frozen primary ended by Down (a run cut
// short during pg-promote) or by Kill (pg-promote's own end) leaves no
// backend behind. Each backend calls setsid(): continuing the postmaster's
// group alone left them stopped, and a SIGKILLed postmaster handed them to
// init before the scan for its children ran; either way they stayed stopped
// for good.
func TestNoBackendOutlivesAPause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	for _, tc := range []struct {
		name string
		end  func(*Runtime) error
	}{
		{"down", func(r *Runtime) error { return r.Down() }},
		{"kill", func(r *Runtime) error { return r.Kill(nodePrimary) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testslot.Parallel(t)
			c := cluster.Defaults()
			c.Topology, c.Dir = Topology, t.TempDir()
			rt, err := cluster.New(c, cluster.Binaries{})
			if err != nil {
				t.Fatal(err)
			}
			r := rt.(*Runtime)
			defer r.Down()
			if err := r.Up(context.Background()); err != nil {
				t.Fatal(err)
			}
			n, _ := r.Node(nodePrimary)
			kids := children(n.PID)
			if len(kids) == 0 {
				t.Fatal("the primary has no child processes to freeze")
			}
			if err := r.Pause(nodePrimary); err != nil {
				t.Fatal(err)
			}
			if err := tc.end(r); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for _, pid := range kids {
				for {
					b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
					if err != nil || strings.Contains(string(b), ") Z ") {
						break // gone, or a zombie awaiting its reaper
					}
					if time.Now().After(deadline) {
						t.Fatalf("backend %d outlived the %s: %s", pid, tc.name, b)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}
