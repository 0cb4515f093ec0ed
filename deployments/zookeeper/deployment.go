// Package zookeeper is the ZooKeeper deployment: an ensemble of members
// (Debian's zookeeper package, a Java program) as processes on loopback
// (runtime.go), or in containers on the docker runtime (docker.go), with no
// Valkey at all; its faults (faults.go) and scenarios (scenarios.go). The
// lock is the ZooKeeper documentation's lock recipe (recipe zk-lock, in
// package lock).
package zookeeper

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
const Topology = "zookeeper"

// ZooKeeper's timing, all in ticks of Tick: a follower gives the leader
// up after syncLimit ticks without a ping (1 s, the same as etcd's election
// timeout here), a new follower has initLimit ticks to sync. Sessions are
// expired by the leader in buckets of one tick, never before their timeout.
const (
	Tick      = 200 * time.Millisecond
	syncLimit = 5
	initLimit = 10
	// ElectionTimeout is how long the followers wait for a silent leader
	// before they elect another: syncLimit ticks.
	ElectionTimeout = syncLimit * Tick
)

// ErrClock is why no member's clock is moved: ZooKeeper's session
// expiry and elections count System.nanoTime (its Time.currentElapsedTime),
// a monotonic clock, which lockjepsen's libfaketime setup leaves true
// (FAKETIME_DONT_FAKE_MONOTONIC); a wall-clock jump would end no session
// early, so there is no clock fault to offer.
var ErrClock = errors.New("a ZooKeeper member's clock is not moved: its session expiry and elections count System.nanoTime, a monotonic clock that lockjepsen's libfaketime leaves true (FAKETIME_DONT_FAKE_MONOTONIC), so a wall-clock jump would end no session early")

func init() { cluster.Register(5, deployment{}) }

// deployment has its own runtimes: Local, and the Docker runtime's service.
type deployment struct{ cluster.ConsensusDeployment }

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "--members ZooKeeper members (Zab), the lock is the ZooKeeper docs' recipe: ephemeral sequential znodes"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "a ZooKeeper ensemble of 3, for a ZooKeeper lock library"
}
func (deployment) Banner(c cluster.Config, version string) string {
	return fmt.Sprintf("cluster: zookeeper, %d members (Zab, tick %v, a silent leader given up after %v; %s)",
		c.Members, Tick, ElectionTimeout, version)
}
func (deployment) Settled() string {
	return "waiting for every ZooKeeper member to serve and one leader"
}
func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	return endpoint.Set{Protocol: endpoint.ZooKeeper, Addrs: cluster.MemberAddrs(rt)}
}
func (deployment) ClockError() error           { return ErrClock }
func (deployment) Protocol() endpoint.Protocol { return endpoint.ZooKeeper }
func (deployment) Offers(need string) bool {
	return need == Topology || need == cluster.NeedAny
}
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	return cluster.RefuseValkeyRunKnobs(k, "ZooKeeper commits every write on a quorum (Zab) before it answers",
		"ZooKeeper fsyncs its transaction log before it answers")
}

// Flags registers --members (cluster.FlagOwner).
func (deployment) Flags(fs *flag.FlagSet, c *cluster.Config) { cluster.MembersFlag(fs, c) }

func (deployment) Validate(c *cluster.Config) error {
	return c.ValidateMembers("ZooKeeper", ErrClock)
}
func (deployment) Layout(c cluster.Config) []cluster.Node {
	return cluster.MemberLayout("zk", c.Members)
}
func (deployment) NewLocal(c cluster.Config, _ cluster.Binaries) (cluster.Runtime, error) {
	z, err := newLocal(c)
	if err != nil {
		return nil, err
	}
	return z, nil
}

// ClientTestLayout: the run's ensemble of three.
func (deployment) ClientTestLayout(*cluster.Config) {}

// ClientTestHooks: the lease is the program's session, whose timeout is the
// TTL: 3 s keeps the session-expiry case short and still outlasts a loaded
// machine's stalls.
func (deployment) ClientTestHooks(_ context.Context, rt cluster.Runtime, ep endpoint.Set) cluster.ClientTestHooks {
	const ttl = 3 * time.Second
	return cluster.ClientTestHooks{TTL: ttl, Against: fmt.Sprintf("%s (%d members, session timeout %v)", rt.Version(), len(ep.Addrs), ttl)}
}

// Comparisons is the deployment's row in the comparison of lock services
// (cluster.Compared): its own recipe, fenced by the number the service
// issues. Its clock-jump cell is n/a for ClockError's reason.
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{{Name: "zookeeper", Recipe: "zk-lock", Fence: "read-write",
		Note:    "ZooKeeper, 3 members (Zab), the docs' lock recipe, fenced by the znode's czxid (--topology zookeeper --recipe zk-lock)",
		ClockNA: "no clock fault on ZooKeeper: its session expiry and elections count System.nanoTime, which libfaketime leaves true here"}}
}
