package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
)

func init() {
	register(command{name: "client-test", run: runClientTest,
		summary: "check your own lock client (a program speaking docs/protocol.md) against one Valkey, or a ZooKeeper ensemble, before any fault"})
}

// recipeFlag is --recipe: a recipe name, or exec:PATH.
type recipeFlag struct{ s *string }

func (f recipeFlag) String() string {
	if f.s == nil {
		return ""
	}
	return *f.s
}

func (f recipeFlag) Set(v string) error {
	if _, err := lock.Lookup(v); err != nil {
		return err
	}
	*f.s = v
	return nil
}

// execArgsFlag is --exec-arg, repeatable: one argument of the exec program each.
type execArgsFlag struct{ args *[]string }

func (f execArgsFlag) String() string {
	if f.args == nil {
		return ""
	}
	return strings.Join(*f.args, " ")
}

func (f execArgsFlag) Set(v string) error { *f.args = append(*f.args, v); return nil }

// recipeUsage lists every recipe from lock's own table, so that a new one
// shows up in -h without editing this line.
var recipeUsage = "lock recipe: " + strings.Join(lock.Names(), ", ") + " (exec:PATH is your own client speaking docs/protocol.md; docs/recipes.md says which runs on which --topology)"

// clientTestTopologies are the deployments client-test starts, each as
// small as its cases need: what the program is handed is what a run hands it
// (the deployment's own endpoints).
var clientTestTopologies = []string{cluster.TopologySentinel, cluster.TopologyStandalone, cluster.TopologyCluster, cluster.TopologyRedlock,
	cluster.TopologyEtcd, cluster.TopologyZooKeeper}

// runClientTest starts the deployment --topology names (one Valkey primary
// watched by one Sentinel by default), starts the program with the
// environment a run gives it, and drives it through lock.ClientTest. Exit 0:
// every case passed; 1: some failed; 254: a protocol error, or the program or
// the server could not be started.
func runClientTest(args []string) int {
	fs := newFlagSet("client-test", "client-test [--topology "+strings.Join(clientTestTopologies, "|")+"] [--exec-arg ARG]... PATH")
	var execArgs []string
	fs.Var(execArgsFlag{&execArgs}, "exec-arg", "an argument for the program (repeat for more)")
	opTimeout := 2 * time.Second
	fs.Var(knob.Duration{D: &opTimeout, Min: 100 * time.Millisecond}, "op-timeout", "an operation not answered by then is info (a failed case)")
	topology := cluster.TopologySentinel
	fs.Var(knob.Choice{S: &topology, Among: clientTestTopologies}, "topology",
		"the server behind the program: sentinel (one Valkey primary, one Sentinel), standalone (one primary, LOCKJEPSEN_ADDR), "+
			"cluster (a Valkey Cluster of 3 primaries: LOCKJEPSEN_CLUSTER_NODES), redlock (3 independent primaries: LOCKJEPSEN_REDLOCK_NODES, "+
			"and a case with one of them stopped), etcd (3 members: LOCKJEPSEN_ETCD_ENDPOINTS, and a case with the leader killed) or zookeeper (a ZooKeeper ensemble of 3, for a ZooKeeper lock library)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return fail("client-test: want one program, e.g. lockjepsen client-test examples/redis-py/adapter.py")
	}
	prog := strings.TrimPrefix(fs.Arg(0), lock.Exec+":")
	recipe := lock.Exec + ":" + prog
	if _, err := lock.Lookup(recipe); err != nil {
		return fail("client-test: %v", err)
	}
	var bins cluster.Binaries
	if topology == cluster.TopologyZooKeeper {
		if _, _, err := cluster.FindZooKeeper(); err != nil {
			return fail("client-test: %v", err)
		}
	} else {
		var err error
		if bins, err = cluster.FindBinaries(); err != nil {
			return fail("%v", err)
		}
	}
	dir, err := os.MkdirTemp("", "lockjepsen-client-test-")
	if err != nil {
		return fail("client-test: %v", err)
	}
	defer os.RemoveAll(dir)
	ccfg := cluster.Defaults()
	ccfg.Dir, ccfg.Topology = dir, topology
	switch topology {
	case cluster.TopologySentinel:
		ccfg.Replicas, ccfg.Sentinels, ccfg.Quorum = 0, 1, 1
	case cluster.TopologyCluster, cluster.TopologyStandalone:
		ccfg.Replicas = 0 // no fault here: the primaries are enough
	case cluster.TopologyRedlock:
		ccfg.Nodes = 3 // a majority of 2, so one node can be stopped
	}
	if err := ccfg.Validate(); err != nil {
		return fail("client-test: %v", err)
	}
	cl, err := cluster.New(ccfg, bins)
	if err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	uctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	err = cl.Up(uctx)
	cancel()
	defer cl.Down()
	if err != nil {
		return fail("client-test: %s up: %v", topology, err)
	}
	ep := ccfg.Deployment().Endpoints(cl)
	lc := lock.Config{Recipe: recipe, ExecArgs: execArgs, Sentinels: ep.Sentinels, MasterSet: ep.MasterSet, Addr: ep.Addr,
		Addrs: ep.Addrs, ClusterAddrs: ep.Cluster, Etcd: ep.Etcd, ZooKeeper: ep.ZooKeeper, TTL: 5 * time.Second, OpTimeout: opTimeout}
	var opt lock.ClientTestOptions
	against := fmt.Sprintf("Valkey %s (1 primary, 1 Sentinel)", bins.Version)
	switch topology {
	case cluster.TopologyStandalone:
		against = fmt.Sprintf("Valkey %s (1 primary, no Sentinel)", bins.Version)
	case cluster.TopologyCluster:
		against = fmt.Sprintf("Valkey %s Cluster (%d primaries)", bins.Version, len(ep.Cluster))
		opt.MoveSlot = func(key string) (func() error, error) {
			m, err := cluster.PlanSlotMove(ctx, cl, key)
			if err != nil {
				return nil, err
			}
			if err := m.Open(ctx, cl); err != nil {
				return nil, err
			}
			if _, err := m.MigrateKeys(ctx, cl, nil); err != nil {
				_, _ = m.Close(context.WithoutCancel(ctx), cl, nil)
				return nil, err
			}
			return func() error { _, err := m.Close(context.WithoutCancel(ctx), cl, nil); return err }, nil
		}
	case cluster.TopologyRedlock:
		against = fmt.Sprintf("Valkey %s, %d independent primaries (Redlock)", bins.Version, len(ep.Addrs))
		opt.PauseNode = func(i int) (func() error, error) {
			name := nodeAt(cl, ep.Addrs[i])
			if err := cl.Pause(name); err != nil {
				return nil, err
			}
			return func() error { return cl.Resume(name) }, nil
		}
	case cluster.TopologyEtcd:
		against = fmt.Sprintf("%s (%d members)", cl.Version(), len(ep.Etcd))
		opt.ChangeLeader = func() (func() error, string, error) {
			l, err := cl.Primary(ctx)
			if err != nil {
				return nil, "", fmt.Errorf("the leader: %w", err)
			}
			if err := cl.Kill(l.Name); err != nil {
				return nil, "", err
			}
			return func() error {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				return cl.Restart(rctx, l.Name, cluster.AsReplica)
			}, l.Name, nil
		}
	case cluster.TopologyZooKeeper:
		// The lease is the program's session: 3 s keeps the session-expiry
		// case short and still outlasts a loaded machine's stalls.
		lc.TTL = 3 * time.Second
		against = fmt.Sprintf("%s (%d members, session timeout %v)", cl.Version(), len(ep.ZooKeeper), lc.TTL)
	}
	fmt.Printf("lockjepsen client-test: %s against %s, protocol %d\n", prog, against, lock.ProtocolVersion)
	rep, err := lock.ClientTest(ctx, lc, os.Stdout, opt)
	if err != nil {
		return fail("client-test: %v", err)
	}
	if rep.Protocol != nil {
		// A protocol error or the program's exit: bad input, exit 254.
		return fail("client-test: %v", rep.Protocol)
	}
	fmt.Printf("%d passed, %d failed; fences %s\n", rep.Passed, rep.Failed, map[bool]string{true: "returned (any --fence)", false: "not returned (--fence none)"}[rep.Fences])
	if rep.Failed > 0 {
		return exitInvalid
	}
	return exitValid
}

// nodeAt is the name of the node clients reach at addr.
func nodeAt(cl cluster.Runtime, addr string) string {
	for _, n := range cl.Nodes() {
		if n.Reach() == addr {
			return n.Name
		}
	}
	return ""
}
