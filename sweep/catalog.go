package sweep

import (
	"slices"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// The named points of the two axes: the settings, the deployments and the
// faults a sweep may name, and the default matrix.

// Catalog holds the named settings of the default matrix. The short WAIT
// timeout is 10ms rather than a literal `WAIT 1 0`: WAIT's 0 means block
// forever, which under a cut link turns every acquire into a client timeout
// (an unknown outcome), not a quick refusal.
var Catalog = []Config{
	{Name: "none", Note: "asynchronous replication, no acknowledgement asked"},
	{Name: "wait-1-10ms", Wait: "1:10ms", Note: "WAIT 1 10 after acquire: one replica acknowledges, or the lock is given back"},
	{Name: "wait-1-100ms", Wait: "1:100ms", Note: "WAIT 1 100"},
	{Name: "wait-2-100ms", Wait: "2:100ms", Note: "WAIT 2 100: both replicas"},
	{Name: "waitaof-1-1-100ms", WaitAOF: "1:1:100ms", AppendOnly: true, Note: "WAITAOF 1 1 100 with appendonly yes: fsynced locally and on one replica"},
	{Name: "min-replicas-1-lag-10", MinReplicas: "1:10", Note: "min-replicas-to-write 1, min-replicas-max-lag 10"},
	{Name: "min-replicas-1-lag-1", MinReplicas: "1:1", Note: "min-replicas-to-write 1, min-replicas-max-lag 1"},
	{Name: "fsync-always", AppendOnly: true, AppendFsync: "always", Note: "appendonly yes, appendfsync always (local durability only)"},
	// A lock sharing a cache's memory limit, under the memory-pressure
	// fault: which policy loses it (scenario/eviction.go).
	{Name: "maxmemory-noeviction", MaxMemory: "16mb", MaxMemoryPolicy: "noeviction", Note: "maxmemory 16mb, noeviction: a full node refuses writes with OOM"},
	{Name: "maxmemory-allkeys-lru", MaxMemory: "16mb", MaxMemoryPolicy: "allkeys-lru", Note: "maxmemory 16mb, allkeys-lru: any key may be evicted"},
	{Name: "maxmemory-volatile-lru", MaxMemory: "16mb", MaxMemoryPolicy: "volatile-lru", Note: "maxmemory 16mb, volatile-lru (the managed services' default): keys with a TTL, least recently used first"},
	{Name: "maxmemory-volatile-ttl", MaxMemory: "16mb", MaxMemoryPolicy: "volatile-ttl", Note: "maxmemory 16mb, volatile-ttl: keys with a TTL, shortest first (the locks)"},
}

// Deployments are the settings-axis points that change the lock service
// itself rather than its replication knobs: one sweep over them and the
// per-deployment fault kinds (failover, paused-client, clock-jump) compares
// the safe alternatives under the same faults and workload. Each maps onto
// runner.Config as the `lockjepsen run` flags in its note would.
var Deployments = func() []Config {
	// In the order Backends reads: the lease rows after the default
	// deployment's, whose nodes they run beside.
	var out []Config
	for _, b := range Backends {
		out = append(out, rowsOf(b)...)
	}
	return out
}()

// DeploymentFaults are the fault kinds that mean the same on every
// deployment, each mapped onto the nemesis faults of each backend.
var DeploymentFaults = []string{"failover", "paused-client", "clock-jump"}

// kindNote is a deployment-neutral kind's note: what it means, then the
// nemesis fault it is on each backend, from the catalog (so that a deployment
// that joins is named without an edit here).
func kindNote(what, kind string) string {
	m := standFor(kind)
	var on []string
	for _, b := range Backends {
		if fs, ok := m[b]; ok {
			on = append(on, b+" "+strings.Join(fs, "+"))
		}
	}
	return what + ": " + strings.Join(on, ", ")
}

// standFor maps a deployment-neutral fault kind onto each backend's nemesis
// faults, as the nemesis catalog's entries say (their Kind and On) and the
// deployment's comparison rows (their StandIns). A lease backend's lock
// lives in the resource's database beside the default deployment, whose
// stand-ins act on its Valkey nodes, not on the lease.
func standFor(kind string) map[string][]string {
	out := map[string][]string{}
	for _, b := range Backends {
		topo := b
		if isInResource(b) {
			topo = cluster.DefaultTopology()
		}
		d, err := cluster.Lookup(topo)
		if err != nil {
			continue
		}
		fs := nemesis.StandsFor(kind, b, d)
		if c, ok := d.(cluster.Compared); ok && b == topo {
			for _, row := range c.Comparisons() {
				for _, f := range row.StandIns[kind] {
					if !slices.Contains(fs, f) {
						fs = append(fs, f)
					}
				}
			}
		}
		if len(fs) > 0 {
			out[b] = fs
		}
	}
	return out
}

// FaultCatalog holds the named faults; any other nemesis fault is asked for
// by its own name. replica-lag is the nemesis's pause-replicas under the
// name the operator's question uses: replicas stopped (SIGSTOP) for 2-4 s,
// nothing killed, so its opportunity is the injection.
var FaultCatalog = []Fault{
	{Name: "link-down", Faults: []string{"cut-replication"}, Note: "replication link cut, primary killed: the failover race"},
	{Name: "resync-window", Faults: []string{"resync-window"}, Note: "replicas full-resync; a lock taken in the window before the primary streams to them; primary killed"},
	{Name: "replica-lag", Faults: []string{"pause-replicas"}, Note: "replicas paused 2-4 s, no kill: they lag, the primary goes on granting"},
	{Name: "fast-restart", Faults: []string{"fast-restart"}, Note: "primary restarted before Sentinel notices; without AOF it comes back empty"},
	{Name: "split-brain", Faults: []string{"pause-primary"}, Note: "primary paused past down-after, a replica promoted, the old primary resumed"},
	{Name: "kill-primary", Faults: []string{"kill-primary"}, Note: "plain SIGKILL of the primary (rarely loses a lock on loopback)"},
	// The three kinds that map per deployment (Deployments): the lock
	// service losing its leader/primary/node, a holder paused past its
	// lease, a server's wall clock jumping forward.
	{Name: "failover", Faults: []string{"cut-replication"}, ByBackend: standFor("failover"),
		Note: kindNote("the lock service loses its primary", "failover")},
	{Name: "paused-client", Faults: []string{"pause-client"}, ByBackend: standFor("paused-client"),
		Note: "holder paused past its TTL (no knob helps: only the fence does); pause-client on every deployment"},
	{Name: "clock-jump", Faults: []string{"clock-bump"}, ByBackend: standFor("clock-jump"),
		NotOn: clockNotOn(),
		Note:  kindNote("a server's wall clock moved forward past the TTL", "clock-jump")},
	{Name: "replica-clock-ahead", Faults: []string{"replica-clock-ahead"}, Note: "a replica whose clock runs ahead promoted: PXAT expiries judged by its clock"},
	{Name: "replica-clock-behind", Faults: []string{"replica-clock-behind"}, Note: "the same with the replica's clock behind: locks outlive their TTL there"},
	// Valkey Cluster (--scenario cluster-failover-race, or any scenario with
	// --topology cluster): the faults act on the lock key's shard.
	{Name: "cluster-link-down", Faults: []string{"cluster-cut-replication"}, Note: "(cluster) the shard's replication cut, its primary killed: the cluster bus elects the replica"},
	{Name: "cluster-takeover", Faults: []string{"cluster-takeover"}, Note: "(cluster) the same cut, then CLUSTER FAILOVER TAKEOVER"},
	{Name: "cluster-graceful", Faults: []string{"cluster-failover"}, Note: "(cluster) the same cut, then a graceful CLUSTER FAILOVER"},
}

// DefaultConfigs and DefaultFaults are the default matrix: every catalog
// setting against the five server-side faults the knobs are meant for.
var (
	DefaultConfigs = []string{"none", "wait-1-10ms", "wait-1-100ms", "wait-2-100ms", "waitaof-1-1-100ms",
		"min-replicas-1-lag-10", "min-replicas-1-lag-1", "fsync-always"}
	DefaultFaults = []string{"link-down", "resync-window", "fast-restart", "split-brain", "replica-lag"}
)

// DefaultTrials is the trial count per cell: with 24 cells at ~30 s a trial
// on 2 cores, 3 trials is a ~40 minute sweep; --min-failovers 20 is the
// reference sweep.
const DefaultTrials = 3
