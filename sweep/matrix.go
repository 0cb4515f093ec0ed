// Package sweep runs one scenario many times across a matrix of replication
// settings × fault kinds and aggregates what the trials measured: how often a
// failover hands a lock out twice (with a Wilson interval), how long the
// window stays open, and what each setting costs in acquire latency and
// availability. Each trial is an ordinary lockjepsen run folder; every number
// in sweep.json is recomputed from those folders (Aggregate), so a sweep that
// was interrupted or edited by hand re-aggregates to the same report.
package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Duration is a time.Duration that reads and writes as "100ms" in JSON, so a
// sweep file is written by hand the way flags are typed.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "100ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: want a string like \"100ms\"", b)
	}
	*d = Duration(n)
	return nil
}

// Config is one point on the settings axis: the replication knobs of a run,
// and, for a deployment, the topology, recipe, fence and fence source it runs
// (sentinel + fence, Redlock, etcd, sql-lease ...). The strings use the
// `lockjepsen run` flag syntax (--wait 1:100ms, --topology redlock ...) and
// are handed to runner.Config unparsed: runner.Config.Validate is their one
// check. An empty field keeps the scenario's value.
type Config struct {
	Name        string `json:"name"`
	Topology    string `json:"topology,omitempty"`     // --topology: sentinel | redlock | etcd | cluster
	Recipe      string `json:"recipe,omitempty"`       // --recipe
	Fence       string `json:"fence,omitempty"`        // --fence: none | write | read-write
	FenceSource string `json:"fence_source,omitempty"` // --fence-source: valkey | resource
	Nodes       int    `json:"nodes,omitempty"`        // --nodes (redlock); 0: 5
	Wait        string `json:"wait,omitempty"`         // replicas:timeout
	WaitAOF     string `json:"waitaof,omitempty"`      // local:replicas:timeout
	MinReplicas string `json:"min_replicas,omitempty"` // count:lag-seconds
	AppendOnly  bool   `json:"appendonly,omitempty"`
	AppendFsync string `json:"appendfsync,omitempty"` // always | everysec | no
	Replicas    int    `json:"replicas,omitempty"`    // 0: the default (2)
	// MaxMemory and MaxMemoryPolicy are --maxmemory and --maxmemory-policy.
	MaxMemory       string `json:"maxmemory,omitempty"`
	MaxMemoryPolicy string `json:"maxmemory_policy,omitempty"`
	Note            string `json:"note,omitempty"` // one line for the report
}

// Fault is one point on the fault axis: nemesis fault kinds and their
// parameters. Duration overrides how long each injected fault is held (for
// faults that are held: pause-primary, pause-client, clock-bump, skew-client);
// Interval is the mean gap between faults.
//
// A point may mean one *kind* of fault on every deployment (failover,
// paused-client, clock-jump): ByBackend then names the nemesis faults it
// stands for on each backend (Backends), Faults holding the sentinel ones,
// and NotOn the backends where the kind has no counterpart, with the reason
// the report prints for the cell (n/a: not run, not faked). A backend in
// neither is refused by Validate.
type Fault struct {
	Name      string              `json:"name"`
	Faults    []string            `json:"faults"`
	ByBackend map[string][]string `json:"by_backend,omitempty"`
	NotOn     map[string]string   `json:"not_on,omitempty"`
	Duration  Duration            `json:"duration,omitempty"`
	Interval  Duration            `json:"interval,omitempty"`
	Note      string              `json:"note,omitempty"`
}

// Plan is a whole sweep: written to plan.json in the sweep folder so that
// --resume knows what remains. A sweep file given with --file has the same
// shape (any field left out takes the default).
type Plan struct {
	Scenario  string   `json:"scenario"`
	Seed      int64    `json:"seed"`       // trial n of every cell uses seed Seed+n
	Trials    int      `json:"trials"`     // trials per cell, always run
	TimeLimit Duration `json:"time_limit"` // 0: the scenario's
	// MinFailovers, when set, keeps adding trials to a cell until it has seen
	// that many opportunities (failovers, or faults for kinds without one),
	// up to MaxTrials.
	MinFailovers int `json:"min_failovers,omitempty"`
	// UntilCI, when set, keeps adding trials to a cell until the 95% Wilson
	// interval of its P is narrower than UntilCI; for a cell with no hit (its
	// interval is [0, hi]) until hi is below Below (default: UntilCI, the
	// same rule); up to MaxTrials. With MinFailovers too, both must hold.
	UntilCI   float64 `json:"until_ci,omitempty"`
	Below     float64 `json:"below,omitempty"`
	MaxTrials int     `json:"max_trials,omitempty"`
	// BackToBack: each trial fires its faults one after the other, as soon
	// as the previous one healed and the cluster is ready again
	// (runner.Config.BackToBack), so a long trial holds many opportunities.
	BackToBack bool     `json:"back_to_back,omitempty"`
	Parallel   int      `json:"parallel"`
	Configs    []Config `json:"configs"`
	Faults     []Fault  `json:"faults"`
	// Shard, when set, makes this folder one shard of a sweep: it runs the
	// trials whose index in Jobs is ≡ Shard.Index mod Shard.Count.
	// `lockjepsen sweep merge` joins shard folders whose plans are equal but
	// for this field.
	Shard *Shard `json:"shard,omitempty"`
	// HostParallel, set by `sweep merge --host-parallel N`, is how many
	// trials ran at once on the machine across all the shards, when the
	// shards ran side by side on one machine (containers): each shard
	// records only its own --parallel, which would then understate the load
	// that widened the windows and latencies. Every merged cell counts at
	// least this many (CellStats.Parallel), and its figures carry the caveat.
	HostParallel int `json:"host_parallel,omitempty"`
}

// Shard is one of Count shards of a sweep.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Adaptive reports whether the plan adds trials beyond Trials.
func (p Plan) Adaptive() bool { return p.MinFailovers > 0 || p.UntilCI > 0 }

// ZeroHitBound is the --until-ci rule for a cell with no hit: its upper bound below this (Below, or UntilCI).
func (p Plan) ZeroHitBound() float64 {
	if p.Below > 0 {
		return p.Below
	}
	return p.UntilCI
}

// Enough reports whether a cell with these counts needs no more trials under
// the plan's stopping rules (always true for a plan without one). A shard
// judges its own counts scaled by the number of shards: the other shards run
// the same number of trials of the cell on the same seeds' neighbours, so the
// merged cell meets the rule about as well (merge reports the real widths).
func (p Plan) Enough(hits, opps int) bool {
	if p.Shard != nil && p.Shard.Count > 1 {
		hits, opps = hits*p.Shard.Count, opps*p.Shard.Count
	}
	if p.MinFailovers > 0 && opps < p.MinFailovers {
		return false
	}
	if p.UntilCI > 0 {
		lo, hi := Wilson(hits, opps, Z95)
		if opps == 0 {
			return false
		}
		if hits == 0 && hi >= p.ZeroHitBound() || hits > 0 && hi-lo >= p.UntilCI {
			return false
		}
	}
	return true
}

// OpportunitiesFor is how many opportunities a cell needs under the --until-ci
// rule when its hits are 0 (the Below bound) and at p = 1/2 (the widest
// interval); 0 without the rule.
func (p Plan) OpportunitiesFor() (zeroHits, half int) {
	if p.UntilCI <= 0 {
		return 0, 0
	}
	for n := 1; n < 1_000_000; n++ {
		if _, hi := Wilson(0, n, Z95); zeroHits == 0 && hi < p.ZeroHitBound() {
			zeroHits = n
		}
		if lo, hi := Wilson(n/2, n, Z95); half == 0 && hi-lo < p.UntilCI {
			half = n
		}
		if zeroHits > 0 && half > 0 {
			break
		}
	}
	return zeroHits, half
}

// Job is one trial of a plan: trial N of a cell.
type Job struct {
	Cell Cell
	N    int
}

// Jobs lists every trial a plan may run, in its fixed order: trial 0 of every
// cell, then trial 1 of every cell, ... up to MaxTrials for an adaptive plan
// (Trials otherwise).
func (p Plan) Jobs() []Job {
	cells := p.Cells()
	n := p.Trials
	if p.Adaptive() {
		n = max(n, p.MaxTrials)
	}
	out := make([]Job, 0, n*len(cells))
	for t := 0; t < n; t++ {
		for _, c := range cells {
			out = append(out, Job{c, t})
		}
	}
	return out
}

// ShardIndex is the index that decides a trial's shard: trial n of the cell
// at position ci of Cells has index ci + n, and shard I of N runs the trials
// whose index is ≡ I mod N. Each cell's trials are so dealt round-robin to
// the shards, starting one shard further for each cell: every shard runs
// every cell (which the per-shard stopping rule needs), the shards' loads
// differ by at most one trial per cell, and the owner of a trial does not
// depend on --trials or --max-trials, which a resume may change. (A plain
// position in Jobs would pin each cell to one shard whenever the shard count
// divides the cell count.)
func ShardIndex(ci, n int) int { return ci + n }

// Owns reports whether this plan's shard runs trial n of the cell with
// index ci in Cells (every trial without a shard).
func (p Plan) Owns(ci, n int) bool {
	if p.Shard == nil || p.Shard.Count <= 1 {
		return true
	}
	return ShardIndex(ci, n)%p.Shard.Count == p.Shard.Index
}

// Owned is how many of the cell's fixed trials (n < Trials) this plan's
// shard runs.
func (p Plan) Owned(ci int) int {
	k := 0
	for n := 0; n < p.Trials; n++ {
		if p.Owns(ci, n) {
			k++
		}
	}
	return k
}

// Unsharded is the plan without its shard: what every shard of one sweep
// shares, and the plan of a merged sweep.
func (p Plan) Unsharded() Plan {
	p.Shard = nil
	return p
}

// HasDeployments reports whether a configuration of the plan sets a
// deployment (topology, recipe, fence or fence source) rather than only
// replication knobs: the report then reads as a comparison of deployments.
func (p Plan) HasDeployments() bool {
	for _, c := range p.Configs {
		if c.Topology != "" || c.Recipe != "" || c.Fence != "" || c.FenceSource != "" {
			return true
		}
	}
	return false
}

// HasLibraries reports whether some configuration runs a third-party
// library (a recipe that brings its own commands), not only the project's
// own recipes (lock.Recipe.Driven): the report then calls its rows locks.
func (p Plan) HasLibraries() bool {
	for _, c := range p.Configs {
		if r, err := lock.Lookup(c.Recipe); err == nil && r.Driven {
			return true
		}
	}
	return false
}

// Cell is one configuration under one fault.
type Cell struct {
	Config Config `json:"config"`
	Fault  Fault  `json:"fault"`
}

// ID names the cell's folder under trials/: config.fault.
func (c Cell) ID() string { return c.Config.Name + "." + c.Fault.Name }

// Cells is the matrix, configurations outer, so the report reads config by
// config and the fault axis sits side by side. A fault kind that maps per
// deployment (Fault.ByBackend) is resolved here: the cell's Fault.Faults are
// the nemesis faults of the configuration's backend. A pair with no
// counterpart (NotOn) is no cell: NotApplicable lists it for the report.
func (p Plan) Cells() []Cell {
	var out []Cell
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			rf, err := f.On(p.Backend(c))
			if err != nil {
				continue // n/a, or refused by Validate
			}
			out = append(out, Cell{Config: c, Fault: rf})
		}
	}
	return out
}

// NACell is a (configuration, fault) pair with no meaning on that
// deployment: the report shows it as n/a with the reason.
type NACell struct {
	Config string `json:"config"`
	Fault  string `json:"fault"`
	Reason string `json:"reason"`
}

// NotApplicable lists the pairs of the matrix that are not run because the
// fault kind has no counterpart on the deployment (Fault.NotOn).
func (p Plan) NotApplicable() []NACell {
	var out []NACell
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			var na *NotApplicableError
			if _, err := f.On(p.Backend(c)); errors.As(err, &na) {
				out = append(out, NACell{Config: c.Name, Fault: f.Name, Reason: na.Reason})
			}
		}
	}
	return out
}

// The backends a fault kind maps onto: the topologies, and sql-lease, whose
// lock lives in the resource's database (its faults act on the database, not
// on the Valkey nodes started beside it).
const (
	BackendSentinel = cluster.TopologySentinel
	BackendRedlock  = cluster.TopologyRedlock
	BackendEtcd     = cluster.TopologyEtcd
	BackendZK       = cluster.TopologyZooKeeper
	BackendCluster  = cluster.TopologyCluster
	BackendSQLLease = lock.SQLLease
)

// Backends lists them in the order the mapping table reads.
var Backends = []string{BackendSentinel, BackendRedlock, BackendEtcd, BackendZK, BackendCluster, BackendSQLLease}

// Backend is what a fault kind maps onto for configuration c: its topology
// (else the scenario's, else sentinel), or sql-lease when its recipe (else
// the scenario's) is the database's own lease.
func (p Plan) Backend(c Config) string {
	sc, _ := scenario.Get(p.Scenario)
	recipe, topo := sc.Recipe, sc.Topology
	if c.Recipe != "" {
		recipe = c.Recipe
	}
	if c.Topology != "" {
		topo = c.Topology
	}
	if recipe == lock.SQLLease {
		return BackendSQLLease
	}
	if topo == "" {
		return BackendSentinel
	}
	return topo
}

// NotApplicableError says that a fault kind has no counterpart on a backend.
type NotApplicableError struct {
	Fault, Backend, Reason string
}

func (e *NotApplicableError) Error() string {
	return fmt.Sprintf("fault %s is n/a on %s: %s", e.Fault, e.Backend, e.Reason)
}

// On is the fault axis point as it runs on a backend: itself for a point
// that does not map per deployment, else its ByBackend faults for that
// backend; a *NotApplicableError for a backend in NotOn, and an error naming
// the backends it knows for any other.
func (f Fault) On(backend string) (Fault, error) {
	if f.ByBackend == nil {
		return f, nil
	}
	if reason, ok := f.NotOn[backend]; ok {
		return Fault{}, &NotApplicableError{Fault: f.Name, Backend: backend, Reason: reason}
	}
	fs, ok := f.ByBackend[backend]
	if !ok {
		var known []string
		for _, b := range Backends {
			if _, ok := f.ByBackend[b]; ok {
				known = append(known, b)
			}
		}
		return Fault{}, fmt.Errorf("fault %s has no meaning on a %s deployment (it maps onto %s)", f.Name, backend, strings.Join(known, ", "))
	}
	g := f
	g.Faults = append([]string(nil), fs...)
	g.ByBackend, g.NotOn = nil, nil
	return g, nil
}

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
var Deployments = []Config{
	{Name: "sentinel-fence", Topology: "sentinel", Recipe: lock.Native, Fence: knob.FenceReadWrite, FenceSource: knob.FenceSourceValkey,
		Note: "Sentinel-managed primary + 2 replicas, recipe native, fence read-write from INCR on Valkey (--fence read-write)"},
	{Name: "sentinel-dbfence", Topology: "sentinel", Recipe: lock.Native, Fence: knob.FenceReadWrite, FenceSource: knob.FenceSourceResource,
		Note: "the same lock, fence numbers from the database's own sequence (--fence-source resource)"},
	{Name: "redlock", Topology: "redlock", Recipe: lock.Redlock, Fence: knob.FenceNone,
		Note: "Redlock over 5 independent primaries, no fence (--topology redlock --recipe redlock --fence none)"},
	{Name: "redlock-dbfence", Topology: "redlock", Recipe: lock.Redlock, Fence: knob.FenceReadWrite, FenceSource: knob.FenceSourceResource,
		Note: "Redlock fenced by the database's sequence (--topology redlock --recipe redlock --fence-source resource)"},
	{Name: "etcd", Topology: "etcd", Recipe: lock.EtcdMutex, Fence: knob.FenceReadWrite,
		Note: "etcd, 3 members (Raft), concurrency.Mutex, fenced by the lock key's create revision (--topology etcd --recipe etcd-mutex)"},
	{Name: "zookeeper", Topology: "zookeeper", Recipe: lock.ZKLock, Fence: knob.FenceReadWrite,
		Note: "ZooKeeper, 3 members (Zab), the docs' lock recipe, fenced by the znode's czxid (--topology zookeeper --recipe zk-lock)"},
	{Name: "sql-lease", Topology: "sentinel", Recipe: lock.SQLLease, Fence: knob.FenceReadWrite,
		Note: "the database's own lease row, fenced by the row's counter (--recipe sql-lease; no Valkey in the lock path)"},
}

// DeploymentFaults are the fault kinds that mean the same on every
// deployment, each mapped onto the nemesis faults of each backend.
var DeploymentFaults = []string{"failover", "paused-client", "clock-jump"}

// standFor maps a deployment-neutral fault kind onto each backend's nemesis
// faults, as the nemesis catalog's entries say (their Kind and On). The
// sql-lease backend's lock lives in the resource's database beside a
// Sentinel deployment.
func standFor(kind string) map[string][]string {
	out := map[string][]string{}
	for _, b := range Backends {
		topo := b
		if b == BackendSQLLease {
			topo = BackendSentinel
		}
		d, err := cluster.Lookup(topo)
		if err != nil {
			continue
		}
		if fs := nemesis.StandsFor(kind, b, d); len(fs) > 0 {
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
		Note: "the lock service loses its primary: sentinel cut-replication (the failover race), cluster " +
			"cluster-cut-replication, redlock crash-node (one node of N killed, down as long as a Sentinel failover, restarted " +
			"empty: a minority down), " +
			"etcd etcd-kill-leader, zookeeper zk-kill-leader, sql-lease restart-db"},
	{Name: "paused-client", Faults: []string{"pause-client"}, ByBackend: standFor("paused-client"),
		Note: "holder paused past its TTL (no knob helps: only the fence does); pause-client on every deployment"},
	{Name: "clock-jump", Faults: []string{"clock-bump"}, ByBackend: standFor("clock-jump"),
		NotOn: map[string]string{
			BackendEtcd: "etcd-clock-bump is refused: libfaketime cannot move a Go program's clock (vDSO), and etcd's leases run on monotonic time",
			BackendZK:   "no clock fault on ZooKeeper: its session expiry and elections count System.nanoTime, which libfaketime leaves true here",
			BackendSQLLease: "the lease row expires on the database's clock (with SQLite the resource service's, a Go process libfaketime " +
				"cannot move; with PostgreSQL clock_timestamp()), and no fault moves it",
			BackendCluster: "no clock fault on Valkey Cluster nodes in this version",
		},
		Note: "a server's wall clock moved forward past the TTL: sentinel clock-bump (the primary), redlock clock-bump-node (one node of N)"},
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

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_+-]*$`)

// LookupConfig finds a catalog setting; a name joined with '+' combines
// catalog settings (wait-1-100ms+fsync-always), later ones overriding the
// knobs they set.
func LookupConfig(name string) (Config, error) {
	out := Config{Name: name}
	var notes []string
	for _, part := range strings.Split(name, "+") {
		var c *Config
		for _, cat := range [][]Config{Catalog, Deployments} {
			for i := range cat {
				if cat[i].Name == part {
					c = &cat[i]
				}
			}
		}
		if c == nil {
			return Config{}, fmt.Errorf("unknown configuration %q (known: %s; combine with '+', or define one with --config NAME=KNOB,...)", part, strings.Join(configNames(), ", "))
		}
		merge(&out, *c)
		if c.Name != "none" {
			notes = append(notes, c.Note)
		}
	}
	out.Note = strings.Join(notes, "; ")
	if out.Note == "" {
		out.Note = Catalog[0].Note
	}
	return out, nil
}

func merge(dst *Config, src Config) {
	over(&dst.Topology, src.Topology)
	over(&dst.Recipe, src.Recipe)
	over(&dst.Fence, src.Fence)
	over(&dst.FenceSource, src.FenceSource)
	over(&dst.Nodes, src.Nodes)
	over(&dst.Wait, src.Wait)
	over(&dst.WaitAOF, src.WaitAOF)
	over(&dst.MinReplicas, src.MinReplicas)
	over(&dst.AppendOnly, src.AppendOnly)
	over(&dst.AppendFsync, src.AppendFsync)
	over(&dst.Replicas, src.Replicas)
	over(&dst.MaxMemory, src.MaxMemory)
	over(&dst.MaxMemoryPolicy, src.MaxMemoryPolicy)
}

// over sets *dst to v when v is set: a later setting of a '+' combination
// overrides only the knobs it names (appendonly cannot be turned back off).
func over[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

func configNames() []string {
	var out []string
	for _, c := range append(append([]Config(nil), Catalog...), Deployments...) {
		out = append(out, c.Name)
	}
	return out
}

// ParseConfig reads a user-defined setting, NAME=KNOB;KNOB...: knobs are
// wait=1:100ms, waitaof=1:1:100ms, min-replicas=1:10, appendonly,
// appendfsync=always, replicas=3, topology=redlock, recipe=redsync,
// fence=write, fence-source=resource, nodes=7, maxmemory=16mb,
// maxmemory-policy=volatile-lru (the values as `lockjepsen run`
// takes them, checked by runner.Config.Validate), or the name of a catalog
// setting or deployment to start from. Semicolons separate knobs because the values use colons and the
// --configs list uses commas.
func ParseConfig(s string) (Config, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok || !nameRE.MatchString(name) {
		return Config{}, fmt.Errorf("--config %q: want NAME=KNOB;KNOB..., e.g. strict=wait=1:100ms;appendonly;appendfsync=always", s)
	}
	c := Config{Name: name}
	// The knobs that take a value, each pointing at its field.
	texts := map[string]*string{"wait": &c.Wait, "waitaof": &c.WaitAOF, "min-replicas": &c.MinReplicas,
		"appendfsync": &c.AppendFsync, "topology": &c.Topology, "recipe": &c.Recipe, "fence": &c.Fence,
		"fence-source": &c.FenceSource, "maxmemory": &c.MaxMemory, "maxmemory-policy": &c.MaxMemoryPolicy}
	counts := map[string]*int{"replicas": &c.Replicas, "nodes": &c.Nodes}
	for _, k := range strings.Split(spec, ";") {
		k = strings.TrimSpace(k)
		key, val, _ := strings.Cut(k, "=")
		switch {
		case key == "":
		case key == "appendonly":
			c.AppendOnly = val == "" || val == "yes" || val == "true"
		case texts[key] != nil:
			*texts[key] = val
		case counts[key] != nil:
			n, err := strconv.Atoi(val)
			if err != nil {
				return Config{}, fmt.Errorf("--config %q: %s=%q is not a number", s, key, val)
			}
			*counts[key] = n
		default:
			base, err := LookupConfig(k)
			if err != nil {
				return Config{}, fmt.Errorf("--config %q: knob %q: want wait=, waitaof=, min-replicas=, appendonly, appendfsync=, replicas=, topology=, recipe=, fence=, fence-source=, nodes=, maxmemory=, maxmemory-policy= or a known configuration", s, k)
			}
			merge(&c, base)
		}
	}
	return c, nil
}

// LookupFault finds a catalog fault, or takes a nemesis fault name as is; a
// suffix sets parameters: split-brain:duration=4s:interval=8s.
func LookupFault(s string) (Fault, error) {
	parts := strings.Split(s, ":")
	var f Fault
	found := false
	for _, c := range FaultCatalog {
		if c.Name == parts[0] {
			f, found = c, true
		}
	}
	if !found {
		if !nameRE.MatchString(parts[0]) {
			return Fault{}, fmt.Errorf("fault %q: bad name", s)
		}
		// A nemesis fault by its own name; Validate finds out if it exists.
		f = Fault{Name: parts[0], Faults: []string{parts[0]}}
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		d, err := time.ParseDuration(v)
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: %s=%q is not a duration", s, k, v)
		}
		// A duration for a fault that acts at once (a kill, a failover)
		// would be dropped without a word: the trial would run the fault's
		// own and the plan would name it as if the duration applied.
		if k == "duration" {
			if err := f.takesDuration(); err != nil {
				return Fault{}, fmt.Errorf("fault %q: duration=%s: %w; leave duration= out (interval= sets the gap between faults)", s, v, err)
			}
		}
		// Refused here, before the plan names a fault "link-down-d-4s" and
		// the sweep starts trials that would each fail or run no fault.
		if d <= 0 && (k == "duration" || k == "interval") {
			return Fault{}, fmt.Errorf("fault %q: %s=%s: want a duration above 0, e.g. %s:%s=4s", s, k, v, parts[0], k)
		}
		switch k {
		case "duration":
			f.Duration = Duration(d)
		case "interval":
			f.Interval = Duration(d)
		default:
			return Fault{}, fmt.Errorf("fault %q: parameter %q: want duration= or interval=", s, k)
		}
		f.Name += "-" + k[:1] + strings.ReplaceAll(v, ".", "_")
	}
	return f, nil
}

// takesDuration says why a duration cannot apply to f: none of its
// nemesis faults is held for a time (Fault.Held). A name the nemesis does
// not know is left to Validate, which names it.
func (f Fault) takesDuration() error {
	names := slices.Clone(f.Faults)
	for _, ns := range f.ByBackend {
		names = append(names, ns...)
	}
	for _, n := range names {
		nf, err := nemesis.Lookup(n)
		if err != nil || nf.Held() {
			return nil
		}
	}
	return fmt.Errorf("%s acts at once and is held for no time", strings.Join(names, ", "))
}

// ReadPlanFile reads a sweep file (JSON, the shape of Plan). Configurations
// and faults may be given by catalog name alone ({"name": "wait-1-100ms"}).
func ReadPlanFile(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read sweep file: %w", err)
	}
	var p Plan
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
	}
	for i, c := range p.Configs {
		if c == (Config{Name: c.Name}) {
			if p.Configs[i], err = LookupConfig(c.Name); err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
			}
		}
	}
	for i, f := range p.Faults {
		// 0 is "the fault's own"; below 0 is a typo to name.
		if f.Duration < 0 || f.Interval < 0 {
			return Plan{}, fmt.Errorf("sweep file %s: fault %q: duration %s, interval %s: want durations above 0, or leave them out for the fault's own",
				path, f.Name, time.Duration(f.Duration), time.Duration(f.Interval))
		}
		if len(f.Faults) == 0 {
			lf, err := LookupFault(f.Name)
			if err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
			}
			lf.Duration, lf.Interval = f.Duration, f.Interval
			p.Faults[i], f = lf, lf
		}
		if f.Duration > 0 {
			if err := f.takesDuration(); err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: fault %q: duration %s: %w; leave duration out", path, f.Name, time.Duration(f.Duration), err)
			}
		}
	}
	return p, nil
}

// Defaults fills what a plan leaves out.
func (p *Plan) Defaults() {
	if p.Scenario == "" {
		p.Scenario = "failover-race"
	}
	if p.Seed == 0 {
		p.Seed = 1
	}
	if p.Trials == 0 {
		p.Trials = DefaultTrials
	}
	if p.Parallel == 0 {
		p.Parallel = 1
	}
	if p.MinFailovers > 0 && p.MaxTrials == 0 {
		p.MaxTrials = 4 * max(p.Trials, p.MinFailovers)
	}
	if p.UntilCI > 0 && p.MaxTrials == 0 {
		p.MaxTrials = DefaultMaxTrials
	}
}

// DefaultMaxTrials caps the trials of a cell under --until-ci: at the
// back-to-back pace a 2-minute trial holds 20-40 opportunities, so 10 trials
// are 200 or more.
const DefaultMaxTrials = 10

// setting names a plan setting both ways a user can have typed it: the flag and
// the sweep file's field (--max-trials, "max_trials").
func setting(flag string) string {
	return fmt.Sprintf("--%s (%q in a sweep file)", flag, strings.ReplaceAll(flag, "-", "_"))
}

// Validate checks the plan by building the run config of every cell, so a
// bad knob is reported before the first trial rather than an hour in.
func (p Plan) Validate() error {
	if len(p.Configs) == 0 || len(p.Faults) == 0 {
		return fmt.Errorf("sweep: the matrix is empty (%d configurations × %d faults)", len(p.Configs), len(p.Faults))
	}
	if p.Trials < 1 {
		return fmt.Errorf("%s %d: want 1 or more", setting("trials"), p.Trials)
	}
	if p.Parallel < 1 || p.Parallel > 16 {
		return fmt.Errorf("%s %d: want 1 to 16", setting("parallel"), p.Parallel)
	}
	if p.TimeLimit < 0 {
		return fmt.Errorf("%s %v: want a workload above 0, or leave it out for the scenario's", setting("time-limit"), time.Duration(p.TimeLimit))
	}
	if p.MinFailovers < 0 {
		return fmt.Errorf("%s %d: want 0 (no minimum) or more", setting("min-failovers"), p.MinFailovers)
	}
	if p.MaxTrials < 0 {
		return fmt.Errorf("%s %d: want a cap of at least the trials, or leave it out", setting("max-trials"), p.MaxTrials)
	}
	if p.Adaptive() && p.MaxTrials < p.Trials {
		return fmt.Errorf("%s %d is below %s %d", setting("max-trials"), p.MaxTrials, setting("trials"), p.Trials)
	}
	// Written so that NaN, which fails every comparison, is refused too.
	if !(p.UntilCI >= 0 && p.UntilCI < 1) {
		return fmt.Errorf("%s %v: want an interval width between 0 and 1, e.g. 0.2", setting("until-ci"), p.UntilCI)
	}
	if !(p.Below >= 0 && p.Below < 1) {
		return fmt.Errorf("%s %v: want a rate between 0 and 1, e.g. 0.04", setting("below"), p.Below)
	}
	if p.Below > 0 && p.UntilCI == 0 {
		return fmt.Errorf("%s %v needs %s", setting("below"), p.Below, setting("until-ci"))
	}
	if s := p.Shard; s != nil && (s.Count < 1 || s.Index < 0 || s.Index >= s.Count) {
		return fmt.Errorf("--shard %d/%d: want I/N with 0 <= I < N", s.Index, s.Count)
	}
	seen := map[string]bool{}
	for _, c := range p.Configs {
		if !nameRE.MatchString(c.Name) || strings.Contains(c.Name, ".") {
			return fmt.Errorf("configuration name %q: letters, digits, '-', '_' and '+' only", c.Name)
		}
		if seen["c"+c.Name] {
			return fmt.Errorf("configuration %q appears twice", c.Name)
		}
		seen["c"+c.Name] = true
	}
	for _, f := range p.Faults {
		if seen["f"+f.Name] {
			return fmt.Errorf("fault %q appears twice", f.Name)
		}
		seen["f"+f.Name] = true
	}
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			var na *NotApplicableError
			if _, err := f.On(p.Backend(c)); err != nil && !errors.As(err, &na) {
				return fmt.Errorf("%s.%s: %w", c.Name, f.Name, err)
			}
		}
	}
	if len(p.Cells()) == 0 {
		return fmt.Errorf("sweep: every pair of the matrix is n/a (%d configurations × %d faults)", len(p.Configs), len(p.Faults))
	}
	for _, cell := range p.Cells() {
		if _, err := p.RunConfig(cell, 0, "/nonexistent"); err != nil {
			return fmt.Errorf("%s: %w", cell.ID(), err)
		}
	}
	return nil
}

// SeedOf is the seed of trial n. Trial n of every cell shares it, so the cells
// are compared on the same fault schedules and client choices where the
// fault kind allows (common random numbers: the differences between
// settings are not drowned by differences between draws).
func (p Plan) SeedOf(n int) int64 { return p.Seed + int64(n) }

// RunConfig builds the runner config of trial n of a cell, writing to out.
func (p Plan) RunConfig(cell Cell, n int, out string) (runner.Config, error) {
	sc, err := scenario.Get(p.Scenario)
	if err != nil {
		return runner.Config{}, fmt.Errorf("--scenario: %w", err)
	}
	cfg := runner.FromScenario(sc)
	cfg.Seed = p.SeedOf(n)
	if p.TimeLimit > 0 {
		cfg.TimeLimit = time.Duration(p.TimeLimit)
	}
	cfg.Faults = append([]string(nil), cell.Fault.Faults...)
	if cell.Fault.Interval > 0 {
		cfg.Interval = time.Duration(cell.Fault.Interval)
	}
	cfg.BackToBack = p.BackToBack
	cfg.UseDefaultFaultGap() // a scenario without faults of its own (baseline), as run --faults
	c := cell.Config
	// A deployment, as `lockjepsen run --topology --recipe --fence
	// --fence-source --nodes` would set it; Validate below is its check.
	if c.Topology != "" {
		cfg.Cluster.Topology = c.Topology
		d, err := cluster.Lookup(c.Topology)
		if err != nil {
			return cfg, err
		}
		// As `run --topology T` without the flags the cell leaves unset.
		d.Defaults(&cfg.Cluster, func(flag string) bool { return flag == "replicas" && c.Replicas != 0 })
	}
	if c.Recipe != "" {
		cfg.Recipe = c.Recipe
	}
	if c.Fence != "" {
		cfg.Fence = c.Fence
	}
	if c.FenceSource != "" {
		cfg.FenceSource = c.FenceSource
	}
	if c.Nodes > 0 {
		cfg.Cluster.Nodes = c.Nodes
	}
	if cfg.Wait, err = knob.ParseWait(c.Wait); err != nil {
		return cfg, err
	}
	if cfg.WaitAOF, err = knob.ParseWaitAOF(c.WaitAOF); err != nil {
		return cfg, err
	}
	mr, err := knob.ParseMinReplicas(c.MinReplicas)
	if err != nil {
		return cfg, err
	}
	cfg.Cluster.MinReplicasToWrite, cfg.Cluster.MinReplicasMaxLag = mr.Count, mr.LagS
	cfg.Cluster.AppendOnly = c.AppendOnly || c.AppendFsync != ""
	if c.AppendFsync != "" {
		cfg.Cluster.AppendFsync = c.AppendFsync
	}
	if c.Replicas > 0 {
		cfg.Cluster.Replicas = c.Replicas
	}
	if c.MaxMemory != "" {
		if cfg.Cluster.MaxMemory, err = knob.ParseBytes(c.MaxMemory); err != nil {
			return cfg, fmt.Errorf("configuration %s: maxmemory %w", c.Name, err)
		}
	}
	if c.MaxMemoryPolicy != "" {
		cfg.Cluster.MaxMemoryPolicy = c.MaxMemoryPolicy
	}
	cfg.Out = out
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if d := time.Duration(cell.Fault.Duration); d > 0 {
		for i := range cfg.Schedule {
			if cfg.Schedule[i].Duration > 0 {
				cfg.Schedule[i].Duration = d
			}
		}
	}
	return cfg, nil
}

// RewritePlan replaces plan.json of a sweep being resumed (only --parallel
// and the adaptive trial counts may change).
func RewritePlan(dir string, p Plan) error { return writePlan(filepath.Join(dir, PlanFile), p) }
