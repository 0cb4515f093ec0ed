package lock

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// An exec program on ZooKeeper: it runs on --topology zookeeper, gets the
// members in LOCKJEPSEN_ZK_SERVERS (and no Sentinels), is validated as
// zk-lock is, and its fences are named zk-czxid; on Valkey nothing changes.
func TestExecOnZooKeeper(t *testing.T) {
	members := []string{"127.0.0.1:2181", "127.0.0.1:2182"}
	onZK := Config{Recipe: "exec:/bin/true", ZooKeeper: members}
	onValkey := Config{Recipe: "exec:/bin/true", Sentinels: []string{"127.0.0.1:26379"}}
	for _, tc := range []struct {
		name   string
		cfg    Config
		zkEnv  string // LOCKJEPSEN_ZK_SERVERS, "" for none
		fences string
	}{
		{"exec on ZooKeeper", onZK, strings.Join(members, ","), history.FenceZxid},
		{"exec on Valkey", onValkey, "", history.FenceValkey},
		{"zk-lock", Config{Recipe: ZKLock, ZooKeeper: members}, strings.Join(members, ","), history.FenceZxid},
		{"etcd-mutex", Config{Recipe: EtcdMutex, Etcd: members}, "", history.FenceEtcdRevision},
		{"sql-lease", Config{Recipe: SQLLease, Resource: "127.0.0.1:1"}, "", history.FenceLeaseRow},
		{"native", Config{Recipe: Native, Sentinels: []string{"127.0.0.1:26379"}}, "", history.FenceValkey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := FenceSource(tc.cfg); got != tc.fences {
				t.Errorf("FenceSource = %s, want %s", got, tc.fences)
			}
			env := ExecEnv(tc.cfg)
			i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, "LOCKJEPSEN_ZK_SERVERS=") })
			switch {
			case tc.zkEnv == "" && i >= 0:
				t.Errorf("ExecEnv sets %s without ZooKeeper endpoints", env[i])
			case tc.zkEnv != "" && (i < 0 || env[i] != "LOCKJEPSEN_ZK_SERVERS="+tc.zkEnv):
				t.Errorf("ExecEnv = %v, want LOCKJEPSEN_ZK_SERVERS=%s", env, tc.zkEnv)
			}
		})
	}
	zkd, err := cluster.Lookup(cluster.TopologyZooKeeper)
	if err != nil {
		t.Fatal(err)
	}
	if err := RunsOn("exec:/bin/true", zkd, nil); err != nil {
		t.Errorf("exec on --topology zookeeper: %v", err)
	}
	bad := onZK
	bad.Wait = WaitOpt{Replicas: 1, TimeoutMs: 100}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "WAIT") {
		t.Errorf("exec on ZooKeeper with WAIT: %v, want the refusal", err)
	}
}
