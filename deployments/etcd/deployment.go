// Package etcd is the etcd deployment: a Raft cluster of etcd members
// (Debian's etcd-server) as processes on loopback (runtime.go), or in
// containers on the docker runtime (docker.go), with no Valkey at all; its
// faults (faults.go) and scenarios (scenarios.go). The lock is the official
// client's concurrency.Mutex (recipe etcd-mutex, in package lock).
package etcd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
)

// Topology is the --topology value.
const Topology = "etcd"

// Raft timing of every member: short, for failovers that fit a short run.
// etcd's rule is election timeout >= 5 x heartbeat; its minimum lease TTL
// follows from them: ceil(1.5 x election timeout) = 2 s.
const (
	Heartbeat       = 100 * time.Millisecond
	ElectionTimeout = 1000 * time.Millisecond
)

// ErrClock is why a member's clock cannot be moved: etcd is a Go binary,
// and Go reads CLOCK_REALTIME and CLOCK_MONOTONIC through the vDSO, never
// through libc's clock_gettime, so libfaketime (an LD_PRELOAD of libc's time
// functions) has nothing to intercept. Verified: etcd 3.4.23 under
// libfaketime with an offset of +1 day logs true time (TestEtcdIgnoresFaketime).
// Its leases and elections run on monotonic time anyway (lease expiry is a
// time.Time with a monotonic reading, Raft counts ticks of a ticker).
var ErrClock = errors.New("an etcd member's clock cannot be moved: etcd is a Go program, which reads the clock through the vDSO, not libc, so libfaketime's LD_PRELOAD does not reach it (verified: etcd under libfaketime +1d logs true time); its leases use monotonic time in any case")

func init() { cluster.Register(2, deployment{}) }

// deployment has its own runtimes: Local, and the Docker runtime's service.
type deployment struct{ cluster.ConsensusDeployment }

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "--members etcd members (Raft), the lock is the official client's concurrency.Mutex"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "3 members: LOCKJEPSEN_ETCD_ENDPOINTS, and a case with the leader killed"
}
func (deployment) Banner(c cluster.Config, version string) string {
	return fmt.Sprintf("cluster: etcd, %d members (Raft, heartbeat %v, election timeout %v; %s)",
		c.Members, Heartbeat, ElectionTimeout, version)
}
func (deployment) Settled() string {
	return "waiting for every etcd member to answer and one leader"
}

func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	return endpoint.Set{Protocol: endpoint.Etcd, Addrs: cluster.MemberAddrs(rt)}
}

func (deployment) ClockError() error           { return ErrClock }
func (deployment) Protocol() endpoint.Protocol { return endpoint.Etcd }
func (deployment) Offers(need string) bool {
	return need == Topology || need == cluster.NeedAny
}
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	return cluster.RefuseValkeyRunKnobs(k, "etcd commits every write through Raft before it answers", "etcd fsyncs its WAL before it answers")
}

// Flags registers --members (cluster.FlagOwner).
func (deployment) Flags(fs *flag.FlagSet, c *cluster.Config) { cluster.MembersFlag(fs, c) }

func (deployment) Validate(c *cluster.Config) error { return c.ValidateMembers("etcd", ErrClock) }
func (deployment) Layout(c cluster.Config) []cluster.Node {
	return cluster.MemberLayout("etcd", c.Members)
}
func (deployment) NewLocal(c cluster.Config, _ cluster.Binaries) (cluster.Runtime, error) {
	e, err := newLocal(c)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// ClientTestLayout: the run's three members, whose leader the leader case
// kills.
func (deployment) ClientTestLayout(*cluster.Config) {}

// ClientTestHooks add the leader case: the leader killed mid-grant, and
// restarted when the case ends.
func (deployment) ClientTestHooks(ctx context.Context, rt cluster.Runtime, ep endpoint.Set) cluster.ClientTestHooks {
	return cluster.ClientTestHooks{
		Against: fmt.Sprintf("%s (%d members)", rt.Version(), len(ep.Addrs)),
		ChangeLeader: func() (func() error, string, error) {
			l, err := rt.Primary(ctx)
			if err != nil {
				return nil, "", fmt.Errorf("the leader: %w", err)
			}
			if err := rt.Kill(l.Name); err != nil {
				return nil, "", err
			}
			return func() error {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				return rt.Restart(rctx, l.Name, cluster.AsReplica)
			}, l.Name, nil
		},
	}
}

// Comparisons is the deployment's row in the comparison of lock services
// (cluster.Compared): its own recipe, fenced by the number the service
// issues. Its clock-jump cell is n/a for ClockError's reason.
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{{Name: "etcd", Recipe: "etcd-mutex", Fence: "read-write",
		Note:    "etcd, 3 members (Raft), concurrency.Mutex, fenced by the lock key's create revision (--topology etcd --recipe etcd-mutex)",
		ClockNA: "etcd-clock-bump is refused: libfaketime cannot move a Go program's clock (vDSO), and etcd's leases run on monotonic time"}}
}
