package lock

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
)

// An exec program runs on every deployment and gets that deployment's own
// endpoints, in one variable each (docs/protocol.md), and no other; on a
// deployment that does not speak Valkey it is validated as that
// deployment's built-in recipe is, and its fences are named as that
// recipe's are. The built-in recipes' fence sources stand beside it.
func TestExecOnEveryDeployment(t *testing.T) {
	members := []string{"127.0.0.1:2181", "127.0.0.1:2182"}
	const dsn = "postgres://lockjepsen@127.0.0.1:6432/lockjepsen?sslmode=disable"
	const prog = "exec:/bin/true"
	for _, tc := range []struct {
		name   string
		cfg    Config
		env    map[string]string // the endpoint variables set, and their values
		fences string
	}{
		{"sentinel", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: members}}, map[string]string{"LOCKJEPSEN_SENTINELS": strings.Join(members, ",")}, history.FenceValkey},
		{"standalone", Config{Recipe: prog, Service: endpoint.One(members[0])}, map[string]string{"LOCKJEPSEN_ADDR": members[0]}, history.FenceValkey},
		{"cluster", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Cluster, Addrs: members}}, map[string]string{"LOCKJEPSEN_CLUSTER_NODES": strings.Join(members, ",")}, history.FenceValkey},
		{"redlock", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Redlock, Addrs: members}}, map[string]string{"LOCKJEPSEN_REDLOCK_NODES": strings.Join(members, ",")}, history.FenceValkey},
		{"etcd", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Etcd, Addrs: members}}, map[string]string{"LOCKJEPSEN_ETCD_ENDPOINTS": strings.Join(members, ",")}, FenceEtcdRevision},
		{"zookeeper", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.ZooKeeper, Addrs: members}}, map[string]string{"LOCKJEPSEN_ZK_SERVERS": strings.Join(members, ",")}, FenceZxid},
		{"postgres", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Postgres, DSN: dsn}}, map[string]string{"LOCKJEPSEN_PG_DSN": dsn}, FencePGSequence},
		{"sentinel behind proxies", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: members[:1], DialMap: map[string]string{"127.0.0.1:7001": "127.0.0.1:9001", "127.0.0.1:7000": "127.0.0.1:9000"}}},
			map[string]string{"LOCKJEPSEN_SENTINELS": members[0], "LOCKJEPSEN_DIAL_MAP": "127.0.0.1:7000=127.0.0.1:9000,127.0.0.1:7001=127.0.0.1:9001"}, history.FenceValkey},
		{"zk-lock", Config{Recipe: ZKLock, Service: endpoint.Set{Protocol: endpoint.ZooKeeper, Addrs: members}}, map[string]string{"LOCKJEPSEN_ZK_SERVERS": strings.Join(members, ",")}, FenceZxid},
		{"etcd-mutex", Config{Recipe: EtcdMutex, Service: endpoint.Set{Protocol: endpoint.Etcd, Addrs: members}}, map[string]string{"LOCKJEPSEN_ETCD_ENDPOINTS": strings.Join(members, ",")}, FenceEtcdRevision},
		{"sql-lease", Config{Recipe: SQLLease, Resource: "127.0.0.1:1"}, map[string]string{}, history.FenceLeaseRow},
		{"native", Config{Recipe: Native, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: members[:1]}}, map[string]string{"LOCKJEPSEN_SENTINELS": members[0]}, history.FenceValkey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := FenceSource(tc.cfg); got != tc.fences {
				t.Errorf("FenceSource = %s, want %s", got, tc.fences)
			}
			env := ExecEnv(tc.cfg)
			for _, name := range endpointVars(tc.cfg) {
				if _, ok := tc.env[name]; !ok {
					t.Errorf("ExecEnv sets %s here", name)
				}
			}
			for name, want := range tc.env {
				if !slices.Contains(env, name+"="+want) {
					t.Errorf("ExecEnv = %v, want %s=%s", env, name, want)
				}
			}
		})
	}
	for _, name := range cluster.Topologies {
		d, err := cluster.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := RunsOn(prog, d, nil); err != nil {
			t.Errorf("exec on --topology %s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"zookeeper", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.ZooKeeper, Addrs: members}}},
		{"etcd", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Etcd, Addrs: members}}},
		{"postgres", Config{Recipe: prog, Service: endpoint.Set{Protocol: endpoint.Postgres, DSN: dsn}}},
	} {
		tc.cfg.Wait = WaitOpt{Replicas: 1, TimeoutMs: 100}
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), "WAIT") {
			t.Errorf("exec on %s with WAIT: %v, want the refusal", tc.name, err)
		}
	}
}

// TestExecInit: a program that will not get ready on this deployment is
// refused as bad input, the refusal naming the variables the deployment set;
// a run whose fault slows replication alone needs a program that said at
// init it dials through LOCKJEPSEN_DIAL_MAP, and one whose fault partitions
// the clients a program that takes "unreachable"; the probe refuses one that
// did not say so before it touches the server. Real programs (sh), no server.
func TestExecInit(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return "exec:" + p
	}
	refusesInit := script("refuses", `read line; echo '{"id":1,"type":"fail","error":"needs LOCKJEPSEN_CLUSTER_NODES"}'; read line`)
	exitsAtOnce := script("exits", `echo "no Sentinel client here" >&2; exit 3`)
	// Both answer ok to everything after init: the probe's acquire and
	// release of a key no server holds.
	okToAll := `while read -r line; do id=${line#*\"id\":}; echo "{\"id\":${id%%[,\}]*},\"type\":\"ok\"}"; done`
	plain := script("plain", `read line; echo '{"id":1,"type":"ok"}'; `+okToAll)
	dials := script("dials", `read line; echo '{"id":1,"type":"ok","dial_map":true}'; `+okToAll)
	cuts := script("cuts", `read line; echo '{"id":1,"type":"ok","unreachable":true}'; `+okToAll)
	cancels := script("cancels", `read line; echo '{"id":1,"type":"ok","cancel":true}'; `+okToAll)
	drops := script("drops", `read line; echo '{"id":1,"type":"ok","drop_reply":true}'; `+okToAll)
	sentinels := []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		name    string
		cfg     Config
		refused string // in the *Refusal's text; "" for none
	}{
		{"init answered fail", Config{Recipe: refusesInit, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}}, "LOCKJEPSEN_SENTINELS"},
		{"exit before init", Config{Recipe: exitsAtOnce, Service: endpoint.Set{Protocol: endpoint.Etcd, Addrs: sentinels}}, "LOCKJEPSEN_ETCD_ENDPOINTS"},
		{"no dial map, none needed", Config{Recipe: plain, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}}, ""},
		{"no dial map, one needed", Config{Recipe: plain, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}, NeedsDialMap: true}, "dial_map"},
		{"dial map honoured", Config{Recipe: dials, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}, NeedsDialMap: true}, ""},
		{"no partition taken, one needed", Config{Recipe: dials, Service: endpoint.Set{Protocol: endpoint.Redlock, Addrs: sentinels}, NeedsPartition: true}, `"unreachable"`},
		{"partition taken", Config{Recipe: cuts, Service: endpoint.Set{Protocol: endpoint.Redlock, Addrs: sentinels}, NeedsPartition: true}, ""},
		{"no cancel taken, one needed", Config{Recipe: plain, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}, NeedsReplies: []string{ReplyCancel}}, `answer init with "cancel":true`},
		{"cancel taken", Config{Recipe: cancels, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}, NeedsReplies: []string{ReplyCancel}}, ""},
		{"cancel taken, drop needed too", Config{Recipe: cancels, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}, NeedsReplies: []string{ReplyCancel, ReplyDrop}}, `"drop_reply"`},
		{"drop taken", Config{Recipe: drops, Service: endpoint.Set{Protocol: endpoint.Sentinel, Addrs: sentinels}, NeedsReplies: []string{ReplyDrop}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.OpTimeout = 200 * time.Millisecond
			err := probeExec(context.Background(), tc.cfg)
			var refusal *Refusal
			switch {
			case tc.refused != "" && (!errors.As(err, &refusal) || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("probe: %v, want a refusal naming %s", err, tc.refused)
			case tc.refused == "" && err != nil:
				t.Errorf("probe: %v", err)
			}
		})
	}
}

// TestInheritedEnv: of lockjepsen's own environment a program keeps all but
// the variables that locate a deployment, which only ExecEnv may set.
func TestInheritedEnv(t *testing.T) {
	tests := []struct {
		in   string
		kept bool
	}{
		{"PATH=/usr/bin", true},
		{"LOCKJEPSEN_TEST_OWNER=TestX", true},
		{"LOCKJEPSEN_PG_DSN=postgres://elsewhere/db", false},
		{"LOCKJEPSEN_SENTINELS=10.0.0.1:26379", false},
		{"LOCKJEPSEN_MASTER_SET=other", false},
		{"LOCKJEPSEN_DIAL_MAP=a=b", false},
		{"LOCKJEPSEN_ZK_SERVERS=", false},
	}
	for _, tt := range tests {
		got := inheritedEnv([]string{tt.in})
		if kept := len(got) == 1; kept != tt.kept {
			t.Errorf("inheritedEnv(%q) kept %v, want %v", tt.in, kept, tt.kept)
		}
	}
}

// Every library a recipe drives is listed once, under the name a person
// knows it by, with the module `version` looks up in the build.
func TestLibrariesOncePerModule(t *testing.T) {
	want := map[string]string{
		"github.com/go-redsync/redsync/v4": "redsync", "github.com/valkey-io/valkey-go": "valkey-go",
		"github.com/bsm/redislock": "redislock", "go.etcd.io/etcd/client/v3": "etcd client", "github.com/go-zookeeper/zk": "go-zookeeper",
	}
	got := map[string]string{}
	for _, l := range Libraries() {
		if _, dup := got[l.Module]; dup {
			t.Errorf("%s listed twice", l.Module)
		}
		got[l.Module] = l.Name
	}
	if len(got) != len(want) {
		t.Errorf("Libraries() = %v, want %v", got, want)
	}
	for m, n := range want {
		if got[m] != n {
			t.Errorf("%s is named %q, want %q", m, got[m], n)
		}
	}
	for _, l := range Libraries() {
		if l.Name == "redsync" && !strings.Contains(l.Note, RedsyncAdapter) {
			t.Errorf("redsync's note %q does not name the adapter %s", l.Note, RedsyncAdapter)
		}
	}
}
