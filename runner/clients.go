package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/workload"
)

// lockConfig is how every client reaches the lock: the deployment's
// endpoints and the run's recipe knobs.
func (r *run) lockConfig() lock.Config {
	ep := r.cfg.Cluster.Deployment().Endpoints(r.cluster)
	rec, _ := lock.Lookup(r.cfg.Recipe)
	lc := lock.Config{Recipe: r.cfg.Recipe, Service: ep}
	lc.Fencing = rec.DrawsFence(r.cfg.Fence, r.cfg.FenceSource)
	lc.ExecArgs, lc.Wait, lc.WaitAOF = r.cfg.ExecArgs, r.cfg.Wait, r.cfg.WaitAOF
	if ep.Protocol.Independent() {
		lc.DriftFactor = r.cfg.DriftFactor // the quorum of N instances allows for drift
	}
	for _, name := range r.cfg.Faults {
		if f, err := nemesis.Lookup(name); err == nil {
			// An exec program's probe must take what the fault needs of it.
			lc.NeedsDialMap = lc.NeedsDialMap || f.Needs.DialMap
			lc.NeedsPartition = lc.NeedsPartition || f.Needs.ClientPartition
			if f.Needs.Replies != "" && !slices.Contains(lc.NeedsReplies, f.Needs.Replies) {
				lc.NeedsReplies = append(lc.NeedsReplies, f.Needs.Replies)
			}
		}
	}
	return lc
}

func (r *run) clientConfig(slot int, keys []string, lc lock.Config) workload.ClientConfig {
	if rc, err := lock.Lookup(lc.Recipe); err == nil && rc.InResource {
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
var startClient = func(ctx context.Context, exe string, cfg workload.ClientConfig, dir string, onEvent func(history.Event)) (clientHandle, error) {
	if err := os.MkdirAll(filepath.Join(dir, runfolder.Clients), 0o755); err != nil {
		return nil, fmt.Errorf("create clients dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, runfolder.ClientLog(cfg.Slot)))
	if err != nil {
		return nil, fmt.Errorf("create client log: %w", err)
	}
	c, err := workload.StartClientWith(ctx, exe, cfg, workload.StartOptions{Stderr: f, OnEvent: onEvent})
	if err != nil {
		f.Close()
		return nil, err
	}
	return clientAdapter{c}, nil
}

type clientAdapter struct{ *workload.Client }

func (c clientAdapter) Stop() { _ = c.Client.Stop() }
