package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Primary returns the deployment's primary: the node a majority of
// Sentinels names, the lock key's shard's primary, the standalone primary.
func (l *Local) Primary(ctx context.Context) (Node, error) {
	return l.cfg.valkey().FindPrimary(ctx, l)
}

// WaitFailover waits until the deployment has a primary other than the node
// `from`, and that node answers as a primary.
func (l *Local) WaitFailover(ctx context.Context, from string) (Node, error) {
	return l.cfg.valkey().AwaitFailover(ctx, l, from)
}

// WaitReady waits until the deployment is ready: on Sentinel's, one primary
// named by every live Sentinel, every live replica's link to it up, and every
// Sentinel seeing all live replicas and the other Sentinels.
func (l *Local) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	d := l.cfg.valkey()
	var last error
	for {
		if last = d.ReadyOnce(ctx, l); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready after %v: %w", ReadyTimeout, last)
		case <-time.After(PollEvery):
		}
	}
}

// Status describes each node as it reports itself, for `cluster status`.
type Status struct {
	Node
	Role    string `json:"role"` // what the node says now: master, slave, sentinel, down, paused
	Detail  string `json:"detail"`
	Primary string `json:"sentinel_primary,omitempty"`
}

// Status asks every node for its role and link state.
func (l *Local) Status(ctx context.Context) []Status {
	var out []Status
	for _, n := range l.Nodes() {
		s := Status{Node: n}
		switch {
		case n.PID == 0:
			s.Role = "down"
		case !alive(n.PID):
			s.Role, s.Detail = "down", fmt.Sprintf("pid %d is gone", n.PID)
		case n.Paused:
			s.Role = "paused"
		case n.Watches():
			s.Role = string(n.Kind)
			if p, err := watcherKinds[n.Kind].Primary(ctx, l, n.Addr); err == nil {
				pn, _ := l.NodeByAddr(p)
				s.Primary = pn.Name
				s.Detail = "primary " + pn.Name
			} else {
				s.Detail = err.Error()
			}
		default:
			inf, err := l.adm.info(ctx, n.Addr, "replication")
			if err != nil {
				s.Role, s.Detail = "unreachable", err.Error()
				break
			}
			s.Role = inf["role"]
			if s.Role == "slave" {
				pn, _ := l.NodeByAddr(inf["master_host"] + ":" + inf["master_port"])
				s.Detail = fmt.Sprintf("of %s, link %s", pn.Name, inf["master_link_status"])
			} else {
				s.Detail = fmt.Sprintf("%s replicas connected", inf["connected_slaves"])
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return !out[i].Watches() && out[j].Watches() })
	return out
}
