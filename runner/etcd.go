package runner

import (
	"fmt"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// The etcd topology's part of a run: the lock config of etcd-mutex, the
// knobs refused there, and the phase lines.

func (r *run) etcdLockConfig() lock.Config {
	return lock.Config{
		Recipe:  r.cfg.Recipe,
		Etcd:    cluster.EtcdEndpoints(r.cluster),
		Fencing: r.cfg.Fence != knob.FenceNone && r.cfg.FenceSource != knob.FenceSourceResource,
	}
}

// validateEtcd refuses the Valkey knobs on the etcd topology.
func (c *Config) validateEtcd() error {
	switch {
	case c.Wait.On():
		return fmt.Errorf("--wait counts Valkey replicas: etcd commits every write through Raft before it answers")
	case c.WaitAOF.On():
		return fmt.Errorf("--waitaof is a Valkey knob: etcd fsyncs its WAL before it answers")
	case c.DelayedRestart > 0:
		return fmt.Errorf("--delayed-restart is a redlock-topology knob: add --topology redlock")
	}
	for _, name := range c.Faults {
		if f, err := nemesis.Lookup(name); err == nil && f.Needs.FakeTime {
			return fmt.Errorf("the %s fault is refused on --topology etcd: %w", name, cluster.ErrEtcdClock)
		}
	}
	return nil
}

func etcdPhase(cfg Config, version string) string {
	return fmt.Sprintf("cluster: etcd, %d members (Raft, heartbeat %v, election timeout %v; %s)",
		cfg.Cluster.Members, cluster.EtcdHeartbeat, cluster.EtcdElectionTimeout, version)
}
