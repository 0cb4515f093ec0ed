package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/workload"
)

func (r *run) lockConfig() lock.Config {
	if r.cfg.Cluster.IsEtcd() {
		return r.etcdLockConfig()
	}
	if r.cfg.Cluster.IsRedlock() {
		return lock.Config{Recipe: r.cfg.Recipe, Addrs: cluster.Addrs(r.cluster), DriftFactor: r.cfg.DriftFactor}
	}
	lc := lock.Config{
		Recipe:    r.cfg.Recipe,
		Sentinels: r.cluster.SentinelAddrs(),
		MasterSet: cluster.MasterName,
		Fencing: fences(r.cfg.Recipe) && r.cfg.FenceSource != knob.FenceSourceResource &&
			(lock.ExecProgram(r.cfg.Recipe) == "" || r.cfg.Fence != knob.FenceNone),
		ExecArgs: r.cfg.ExecArgs,
		Wait:     r.cfg.Wait,
		WaitAOF:  r.cfg.WaitAOF,
	}
	if r.cfg.Cluster.IsCluster() {
		lc.Sentinels, lc.MasterSet, lc.ClusterAddrs = nil, "", cluster.Addrs(r.cluster)
	}
	return lc
}

func (r *run) clientConfig(slot int, keys []string, lc lock.Config) workload.ClientConfig {
	if lc.Recipe == lock.SQLLease {
		lc.Resource = r.res.addr // the lock is a row of the resource's database
	}
	return workload.ClientConfig{
		FenceSource: r.cfg.FenceSource,
		Slot:        slot, NumClients: r.cfg.Clients, Lock: lc, Keys: keys,
		TTLMs:        r.cfg.TTL.Milliseconds(),
		ThinkMs:      r.cfg.Job.Think.Milliseconds(),
		PauseMs:      r.cfg.Job.Pause.Milliseconds(),
		Steps:        r.cfg.Job.Steps,
		ResourceAddr: r.res.addr,
		Seed:         r.cfg.Seed*1000 + int64(slot) + 1,
	}
}

// startClient starts one client process; its diagnostics go to
// clients/<slot>.log in the run directory.
var startClient = func(ctx context.Context, exe string, cfg workload.ClientConfig, dir string) (clientHandle, error) {
	if err := os.MkdirAll(filepath.Join(dir, runfolder.Clients), 0o755); err != nil {
		return nil, fmt.Errorf("create clients dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, runfolder.ClientLog(cfg.Slot)))
	if err != nil {
		return nil, fmt.Errorf("create client log: %w", err)
	}
	c, err := workload.StartClientWith(ctx, exe, cfg, workload.StartOptions{Stderr: f})
	if err != nil {
		f.Close()
		return nil, err
	}
	return clientAdapter{c}, nil
}

type clientAdapter struct{ *workload.Client }

func (c clientAdapter) Stop() { _ = c.Client.Stop() }

// fences reports whether the recipe draws fencing tokens
// (MULTI/SET NX/INCR/EXEC); Validate has refused unknown recipes. An exec
// program is asked for fences only when the resource checks them.
func fences(recipe string) bool {
	r, _ := lock.Lookup(recipe)
	return r.Fences()
}
