package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// failoverSpan covers detection (down-after), election and the old node's rejoin.
func failoverSpan(_ Step, p PlanParams) time.Duration { return p.DownAfter + 5*time.Second }

func heldSpan(s Step, _ PlanParams) time.Duration { return s.Duration + time.Second }

// The network faults (network.go) join at the end.
var catalog = append([]*Fault{
	{
		Name:     "kill-primary",
		Cycle:    4 * time.Second,
		Failover: true, Needs: Needs{Replicas: 1},
		Marks:  []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc:    "SIGKILL the primary; Sentinel promotes a replica; the old primary rejoins as a replica",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: runKillPrimary,
	},
	{
		Name: "cut-replication",
		Kind: "failover", On: []string{cluster.TopologySentinel},
		// Fresh grant ~0.1-3 s, SIGKILL to promotion ~2.1 s, rejoin and full
		// resync ~1.2 s (the replica loads the RDB at its next 1 s cron).
		Cycle:    5 * time.Second,
		Failover: true, Needs: Needs{Replicas: 1},
		Marks: []Mark{{Event: "cut-replication", Heal: "heal-replication", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "the failover race: pause the replicas, drop their links, let a client acquire on the primary alone, " +
			"SIGKILL the primary, resume the replicas 50ms later; the promoted replica never saw the lock",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: runCutReplication,
	},
	{
		Name: "resync-window",
		// Full resyncs of ~1.3 s until a grant lands 250-900 ms into a window
		// (one in ten to twenty), then as cut-replication.
		Cycle:    22 * time.Second,
		Failover: true, Needs: Needs{Replicas: 1},
		Marks: []Mark{{Event: "resync-window", Heal: "resync-done", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "make every replica full-sync, again until a lock is taken in the ~1s after the primary lists them " +
			"online but before it streams to them; then SIGKILL the primary: the promoted replica never saw the lock",
		plan: func(*rand.Rand, PlanParams) Step { return Step{} },
		// Resyncs until an acquire lands in a window: ~10 resyncs of ~1.3 s.
		span:   func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 18*time.Second },
		inject: runResyncWindow,
	},
	{
		Name:  "pause-replicas",
		Cycle: 3500 * time.Millisecond,
		Needs: Needs{Replicas: 1},
		Marks: []Mark{{Event: "pause-replicas", Heal: "resume-replicas", Cause: CauseReplication, Moment: marks.MomentGrant}},
		Doc: "SIGSTOP every replica for a while, then SIGCONT: no failover, but min-replicas-to-write and WAIT " +
			"refuse writes meanwhile (the cost side of those knobs)",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))}
		},
		span:   heldSpan,
		inject: runPauseReplicas,
	},
	{
		Name:  "clock-strobe",
		Needs: Needs{FakeTime: true},
		Marks: []Mark{{Event: "clock-strobe", Heal: "clock-reset", Cause: CauseServerClock}},
		Doc:   "flip the primary's wall clock between true time and a jump past the TTL every 200ms (libfaketime)",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			secs := 2*p.TTL.Seconds() + float64(rng.IntN(5))
			return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(time.Second))), Offset: fmt.Sprintf("+%.0f", secs)}
		},
		span:   heldSpan,
		inject: runClockStrobe,
	},
	{
		Name: "fast-restart",
		// ~1.5 s when Sentinel does not notice; but a restart loses the PING
		// in flight on Sentinel's link, and with down-after 1 s a quorum
		// sometimes marks the primary down and fails over anyway; the cluster
		// is ready again only once Sentinel demotes the restarted old primary
		// (~10 s): about one fault in three here.
		Cycle: 5 * time.Second,
		Marks: []Mark{{Event: "fast-restart", Heal: "restarted", Cause: CauseFastRestart}},
		Doc: "SIGKILL the primary and restart it at once with its old config, faster than down-after: no failover, " +
			"and without AOF the replicas resync from an empty primary, so every lock vanishes",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   func(_ Step, p PlanParams) time.Duration { return 4 * time.Second },
		inject: runFastRestart,
	},
	{
		Name:     "failover-coordinated",
		Failover: true, Needs: Needs{Replicas: 1, Topology: cluster.NeedPrimary},
		Marks: []Mark{{Event: "failover-coordinated", Heal: "coordinated-done", Cause: CauseFailover, Moment: marks.MomentGrant}},
		Doc: "a maintenance switch: the replicas' links cut and a fresh grant on the primary, the links back, then a " +
			"coordinated failover (SENTINEL FAILOVER ... COORDINATED; FAILOVER TO on standalone): writes paused until the replica caught up",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   func(_ Step, p PlanParams) time.Duration { return 2*p.TTL + 8*time.Second },
		inject: func(ctx context.Context, env Env, s Step) error { return runCoordinated(ctx, env, false) },
	},
	{
		Name:     "failover-coordinated-force",
		Failover: true, Needs: Needs{Replicas: 1, Topology: cluster.TopologyStandalone},
		Marks: []Mark{{Event: "failover-coordinated-force", Heal: "coordinated-done", Cause: CauseFailover, Moment: marks.MomentGrant}},
		Doc: "the same switch with the replica paused behind the fresh grant: FAILOVER TO ... TIMEOUT 300 FORCE on the " +
			"primary switches when the timeout expires (a paused target still reads the stream waiting in its socket first)",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   func(_ Step, p PlanParams) time.Duration { return 2*p.TTL + 8*time.Second },
		inject: func(ctx context.Context, env Env, s Step) error { return runCoordinated(ctx, env, true) },
	},
	{
		Name:  "memory-pressure",
		Needs: Needs{MaxMemory: true, Runtime: cluster.RuntimeLocal},
		Marks: []Mark{{Event: "memory-pressure", Heal: "memory-drained", Cause: marks.CauseEviction}},
		Doc: "a shared cache's burst on the primary while a lock is held: valkey-benchmark writes 1 KiB entries (half with " +
			"a 1 h TTL, half with none) to 1.5x --maxmemory, then the cache is drained; logs evicted_keys and which lock keys went",
		plan:   pressurePlan,
		span:   pressureSpan,
		inject: runMemoryPressure,
		heal:   drainCache,
	},
	{
		Name:  "memory-pressure-dedicated",
		Needs: Needs{MaxMemory: true, Runtime: cluster.RuntimeLocal},
		Marks: []Mark{{Event: "memory-pressure-dedicated", Heal: "memory-pressure-dedicated-drained", Cause: marks.CauseEviction}},
		Doc: "the same cache burst on a cache instance of its own (a standalone Valkey with the same --maxmemory and " +
			"policy): the lock's nodes are a dedicated lock instance; their evicted_keys are logged before and after",
		plan:   pressurePlan,
		span:   pressureSpan,
		inject: runMemoryPressureDedicated,
	},
	{
		Name:     "promote-replica",
		Failover: true, Needs: Needs{Replicas: 1, Topology: cluster.TopologyStandalone},
		Marks: []Mark{{Event: "promote-replica", Heal: "promoted", Cause: CauseFailover}},
		Doc: "an operator's manual promotion (standalone): the replicas' links cut, a fresh grant on the primary alone, " +
			"then REPLICAOF NO ONE on a replica that never saw it, the service address moved to it, the old primary demoted",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   func(_ Step, p PlanParams) time.Duration { return 2*p.TTL + 6*time.Second },
		inject: runPromoteReplica,
	},
	{
		Name: "pause-primary",
		// Paused 4-5 s, then ~10 s until Sentinel demotes the resumed primary.
		Cycle:    15 * time.Second,
		Failover: true, Needs: Needs{Replicas: 1},
		Marks: []Mark{{Event: "pause-node", Heal: "resume-node", Cause: CauseSplitBrain}},
		Doc: "SIGSTOP the primary past down-after (split brain): Sentinel promotes a replica; SIGCONT and the old " +
			"primary serves clients still connected to it until Sentinel demotes it",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Duration: 2*p.DownAfter + 2*time.Second + time.Duration(rng.Int64N(int64(time.Second)))}
		},
		span:   func(s Step, p PlanParams) time.Duration { return s.Duration + 4*time.Second },
		inject: runPausePrimary,
	},
	{
		Name:  "pause-client",
		Kind:  "paused-client",
		Needs: Needs{Topology: TopologyAny},
		Marks: []Mark{{Event: "pause-client", Heal: "resume-client", Cause: CauseClientPause}},
		Doc: "SIGSTOP a client that holds a lock for longer than the TTL, then SIGCONT: it wakes up believing it " +
			"still holds the lock, and writes",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Duration: p.TTL + p.TTL/2 + time.Duration(rng.Int64N(int64(p.TTL/2)+1))}
		},
		span:   heldSpan,
		inject: runPauseClient,
	},
	{
		Name: "clock-bump",
		Kind: "clock-jump", On: []string{cluster.TopologySentinel},
		Needs: Needs{FakeTime: true},
		Marks: []Mark{{Event: "clock-bump", Heal: "clock-reset", Cause: CauseServerClock}},
		Doc:   "move the primary's wall clock forward by more than the TTL (libfaketime): leases there expire early",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			secs := 2*p.TTL.Seconds() + float64(rng.IntN(5))
			return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(time.Second))), Offset: fmt.Sprintf("+%.0f", secs)}
		},
		span:   heldSpan,
		inject: runClockBump,
	},
	{
		Name:  "skew-client",
		Needs: Needs{Topology: TopologyAny},
		Marks: []Mark{{Event: "skew-client", Heal: "unskew-client", Cause: CauseClientClock}},
		Doc:   "slow a holder's own clock (rate < 1): it believes its lease lasts longer than it does",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			// At rate r the client renews every TTL/(3r) of true time: below
			// 1/3 its lease runs out on the server before it renews.
			return Step{Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1)), Rate: 0.1 + float64(rng.IntN(3))*0.05}
		},
		span:   heldSpan,
		inject: runSkewClient,
	},
	{
		Name:     "partition",
		Failover: true, Needs: Needs{Replicas: 1, Runtime: "docker"},
		Marks: []Mark{{Event: "partition", Heal: "heal-partition", Cause: CauseSplitBrain}},
		Doc: "after a fresh grant, cut the primary off from the Sentinels and replicas while the clients still reach it " +
			"(docker runtime only), past down-after: the majority promotes a replica, the old primary keeps granting; heal and it is demoted",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Duration: 2*p.DownAfter + 2*time.Second + time.Duration(rng.Int64N(int64(time.Second)))}
		},
		span:   func(s Step, p PlanParams) time.Duration { return s.Duration + 4*time.Second },
		inject: runPartition,
	},
	{
		Name:  "kill-node",
		Needs: Needs{Topology: TopologyRedlock},
		Marks: []Mark{{Event: "kill-node", Heal: "restart-node", Cause: CauseNodeRestart}},
		Doc: "(redlock) SIGKILL one node and restart it as a primary, after --delayed-restart: without AOF it " +
			"forgets every lock it granted",
		plan:   planNode,
		span:   func(_ Step, p PlanParams) time.Duration { return 3 * time.Second },
		inject: runKillNode,
	},
	{
		Name:  "crash-node",
		Kind:  "failover",
		Needs: Needs{Topology: TopologyRedlock},
		Marks: []Mark{{Event: "kill-node", Heal: "restart-node", Cause: CauseNodeRestart}},
		Doc: "(redlock) SIGKILL one node, keep it down as long as a Sentinel failover takes (down-after + 1.2 s, or " +
			"--delayed-restart if longer), restart it as a primary: a minority unavailable, then a node that forgot its locks",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			s := planNode(rng, p)
			// SIGKILL to promotion seen is ~2.2 s with down-after 1 s (docs/sweep.md).
			s.Duration = p.DownAfter + 1200*time.Millisecond
			return s
		},
		span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 2*time.Second },
		inject: runCrashNode,
	},
	{
		Name:  "pause-node",
		Needs: Needs{Topology: TopologyRedlock},
		Marks: []Mark{{Event: "pause-redlock-node", Heal: "resume-redlock-node", Cause: CauseSplitBrain}},
		Doc:   "(redlock) SIGSTOP one node for a while: a minority down, Redlock keeps granting on the others",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Node: rng.IntN(64), Duration: 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))}
		},
		span:   heldSpan,
		inject: runPauseNode,
	},
	{
		Name:   "clock-bump-node",
		Kind:   "clock-jump",
		Needs:  Needs{Topology: TopologyRedlock, FakeTime: true},
		Marks:  []Mark{{Event: "clock-bump-node", Heal: "clock-reset-node", Cause: CauseServerClock}},
		Doc:    "(redlock) move one node's wall clock forward past the TTL (libfaketime): its copies expire early, the majority's do not",
		plan:   clockPlan,
		span:   heldSpan,
		inject: runClockBumpNode,
	},
	{
		Name:  "redlock-clock-jump",
		Needs: Needs{Topology: TopologyRedlock, FakeTime: true},
		Marks: []Mark{{Event: "partial-partition", Heal: "heal-partition-clients", Cause: CausePartialPartition}, {Event: "clock-bump-node", Heal: "clock-reset-node", Cause: CauseServerClock}},
		Doc: "(redlock) Kleppmann's scenario: even clients reach A,B,C, odd ones C,D,E; once one side holds the lock, " +
			"C's clock jumps past the TTL and the other side takes C,D,E",
		plan:   clockPlan,
		span:   func(s Step, p PlanParams) time.Duration { return s.Duration + 2*p.TTL + 3*time.Second },
		inject: runRedlockClockJump,
	},
	{
		Name:  "redlock-restart",
		Needs: Needs{Topology: TopologyRedlock},
		Marks: []Mark{{Event: "partial-partition", Heal: "heal-partition-clients", Cause: CausePartialPartition}, {Event: "kill-node", Heal: "restart-node", Cause: CauseNodeRestart}},
		Doc: "(redlock) the distlock page's example: one side holds A,B,C; C is killed and restarted (after " +
			"--delayed-restart); without persistence it forgot the lock and the other side takes C,D,E",
		plan: func(rng *rand.Rand, p PlanParams) Step { return Step{Duration: p.TTL + time.Second} },
		span: func(s Step, p PlanParams) time.Duration {
			return s.Duration + 2*p.TTL + 4*time.Second
		},
		inject: runRedlockRestart,
	},
	{
		Name:  "partition-minority",
		Needs: Needs{Topology: TopologyRedlock, Runtime: "docker"},
		Marks: []Mark{{Event: "isolate-node", Heal: "heal-isolate-node", Cause: CauseMinorityPartition}},
		Doc: "(redlock, docker runtime) cut a minority of the nodes (2 of 5) off from every client for two to three " +
			"TTLs, then heal: the majority still grants, extends and releases, so the lock stays valid",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Node: rng.IntN(64), Duration: 2*p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1))}
		},
		span:   heldSpan,
		inject: runPartitionMinority,
	},
	{
		Name:     "cluster-kill-primary",
		Failover: true, Needs: Needs{Replicas: 1, Topology: TopologyCluster},
		Marks:  []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc:    "(cluster) SIGKILL the primary of the lock key's shard; the cluster bus promotes its replica; the old primary rejoins as a replica",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: runClusterKillPrimary,
	},
	{
		Name:     "cluster-cut-replication",
		Kind:     "failover",
		Failover: true, Needs: Needs{Replicas: 1, Topology: TopologyCluster},
		Marks: []Mark{{Event: "cluster-cut-replication", Heal: "cluster-heal-replication", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "(cluster) the failover race on the lock key's shard: pause its replicas, drop their links, await a fresh grant, " +
			"SIGKILL its primary, resume the replicas; the cluster bus elects a replica that never saw the lock",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: runClusterCutReplication,
	},
	{
		Name:     "cluster-failover",
		Failover: true, Needs: Needs{Replicas: 1, Topology: TopologyCluster},
		Marks: []Mark{{Event: "cluster-cut-replication", Heal: "cluster-heal-replication", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "cluster-failover", Heal: "cluster-failover-done", Cause: CauseFailover}},
		Doc: "(cluster) the same cut and fresh grant, then a graceful CLUSTER FAILOVER on the shard's replica: it waits " +
			"until it has caught up with the primary before taking over, so nothing is lost",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: manualFailover(failoverGraceful),
	},
	{
		Name:     "cluster-failover-force",
		Failover: true, Needs: Needs{Replicas: 1, Topology: TopologyCluster},
		Marks: []Mark{{Event: "cluster-cut-replication", Heal: "cluster-heal-replication", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "cluster-failover", Heal: "cluster-failover-done", Cause: CauseFailover}},
		Doc: "(cluster) the same cut and fresh grant, then CLUSTER FAILOVER FORCE: no handshake with the primary, the " +
			"replica takes over before catching up, and the old primary's unreplicated grant is lost",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: manualFailover(failoverForce),
	},
	{
		Name:     "cluster-takeover",
		Failover: true, Needs: Needs{Replicas: 1, Topology: TopologyCluster},
		Marks: []Mark{{Event: "cluster-cut-replication", Heal: "cluster-heal-replication", Cause: CauseFailover, Moment: marks.MomentGrant}, {Event: "cluster-failover", Heal: "cluster-failover-done", Cause: CauseFailover}},
		Doc: "(cluster) the same with CLUSTER FAILOVER TAKEOVER: no handshake and no vote, the replica bumps the epoch " +
			"itself; what it had not received is lost",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   failoverSpan,
		inject: manualFailover(failoverTakeover),
	},
	{
		Name:  "migrate-slot",
		Needs: Needs{Topology: TopologyCluster}, MovesPrimary: true,
		Marks: []Mark{{Event: "migrate-slot", Heal: "migrate-slot-done", Cause: marks.CauseReshard}},
		Doc: "(cluster) legacy resharding under a held lock: after a fresh grant, the lock key's slot opened on its shard " +
			"(SETSLOT MIGRATING) and the next (IMPORTING) for 1.5 to 2 TTLs, its keys MIGRATEd half a TTL in, then SETSLOT NODE",
		// The window: 1.5 to 2 TTLs, four and a half to six renew periods:
		// long enough that the holder's job (about a TTL in the reshard
		// scenarios) ends with its release inside, and the next clients'
		// acquires run there too.
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Duration: p.TTL*3/2 + time.Duration(rng.Int64N(int64(p.TTL/2)+1))}
		},
		// The fresh grant (well under a TTL with 8 clients), the window, the close.
		span:   func(s Step, p PlanParams) time.Duration { return p.TTL + s.Duration + 2*time.Second },
		inject: runMigrateSlot,
	},
	{
		Name:  "migrate-slot-atomic",
		Needs: Needs{Topology: TopologyCluster}, MovesPrimary: true,
		Marks: []Mark{{Event: "migrate-slot-atomic", Heal: "migrate-slot-atomic-done", Cause: marks.CauseReshard}},
		Doc: "(cluster) atomic slot migration under a held lock: after a fresh grant, CLUSTER MIGRATESLOTS moves the " +
			"lock key's slot to the next shard, awaited until CLUSTER GETSLOTMIGRATIONS reports it done",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   func(_ Step, p PlanParams) time.Duration { return p.TTL + 3*time.Second },
		inject: runMigrateSlotAtomic,
	},
	{
		Name:   "crash-client",
		Needs:  Needs{Topology: TopologyAny},
		Marks:  []Mark{{Event: "crash-client", Heal: "client-gone", Cause: CauseClientCrash}},
		Doc:    "a client SIGKILLs itself at its next acquire's step point: between SETNX and EXPIRE for setnx-expire, right after SET NX PX for the others",
		plan:   planNode,
		span:   func(_ Step, p PlanParams) time.Duration { return 2 * time.Second },
		inject: runCrashClient,
	},
	{
		Name:   "kill-holder",
		Needs:  Needs{Topology: TopologyAny},
		Marks:  []Mark{{Event: "kill-client", Heal: "client-gone", Cause: CauseClientCrash}},
		Doc:    "SIGKILL a holder after it renewed its lock once, for good: a recipe whose renewal dropped the TTL leaves the lock stuck",
		plan:   planNode,
		span:   func(_ Step, p PlanParams) time.Duration { return p.TTL + 2*time.Second },
		inject: runKillHolder,
	},
	{
		Name:     "replica-clock-ahead",
		Failover: true, Needs: Needs{Replicas: 1, FakeTime: true},
		Marks: []Mark{{Event: "replica-clock", Heal: "replica-clock-reset", Cause: CauseReplicaClock}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "move one replica's wall clock ahead by twice the TTL, make it the only one Sentinel may promote, wait for a " +
			"fresh grant and SIGKILL the primary: locks reach replicas as absolute PXAT times, so on the promoted clock they are already over",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Offset: fmt.Sprintf("+%.0f", 2*p.TTL.Seconds()+float64(rng.IntN(3)))}
		},
		span:   func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 18*time.Second },
		inject: runReplicaClock,
	},
	{
		Name:     "replica-clock-behind",
		Failover: true, Needs: Needs{Replicas: 1, FakeTime: true},
		Marks: []Mark{{Event: "replica-clock", Heal: "replica-clock-reset", Cause: CauseReplicaClock}, {Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "the same with the replica's clock behind by half the TTL: after the failover locks outlive their TTL " +
			"there (no double grant, but a lock nobody renews blocks others for longer)",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			// Half the TTL: the heal puts the clock right, a forward jump of
			// that much, which a holder renewing every TTL/3 survives; a
			// larger step would end leases early (the clock-jump lesson).
			return Step{Offset: fmt.Sprintf("-%.1f", p.TTL.Seconds()/2)}
		},
		span:   func(_ Step, p PlanParams) time.Duration { return p.DownAfter + 18*time.Second },
		inject: runReplicaClock,
	},
	{
		Name: "restart-db",
		Kind: "failover", On: []string{"sql-lease"},
		Marks: []Mark{{Event: "restart-db", Heal: "db-restarted", Cause: CauseDBRestart}},
		Doc: "SIGKILL the resource service and the SQLite database it owns (WAL kept), keep it down for 1-2s, restart " +
			"it on the same address: the sql-lease recipe's lock is unavailable meanwhile, and grants nothing twice",
		plan: func(rng *rand.Rand, p PlanParams) Step {
			return Step{Duration: time.Second + time.Duration(rng.Int64N(int64(time.Second)))}
		},
		span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 3*time.Second },
		inject: runRestartDB,
	},
	{
		Name:     "etcd-kill-leader",
		Kind:     "failover",
		Failover: true, Needs: Needs{Topology: TopologyEtcd},
		Marks: []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "(etcd) SIGKILL the Raft leader; the others elect a new one; the old leader restarts from its data dir " +
			"and rejoins as a follower",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   etcdKillSpan,
		inject: runEtcdKillLeader,
	},
	{
		Name:     "etcd-pause-leader",
		Failover: true, Needs: Needs{Topology: TopologyEtcd},
		Marks: []Mark{{Event: "pause-node", Heal: "resume-node", Cause: CauseSplitBrain}},
		Doc: "(etcd) SIGSTOP the Raft leader for 2-3 election timeouts: the others elect a new leader; SIGCONT and " +
			"the old one, on an older term, steps down",
		plan:   planEtcdPause,
		span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 3*time.Second },
		inject: runEtcdPauseLeader,
	},
	{
		Name:     "etcd-partition-member",
		Failover: true, Needs: Needs{Topology: TopologyEtcd, Runtime: "docker"},
		Marks: []Mark{{Event: "partition", Heal: "heal-partition", Cause: CauseSplitBrain}},
		Doc: "(etcd, docker runtime) cut the Raft leader off from the other members for 2-3 election timeouts while the " +
			"clients still reach it: the majority elects a new leader, the old one cannot commit; heal and it steps down",
		plan:   planEtcdPause,
		span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 3*time.Second },
		inject: runEtcdPartitionLeader,
	},
	{
		Name:     "zk-kill-leader",
		Kind:     "failover",
		Failover: true, Needs: Needs{Topology: TopologyZooKeeper},
		Marks: []Mark{{Event: "kill", Heal: "restart", Cause: CauseFailover}},
		Doc: "(zookeeper) SIGKILL the Zab leader; the followers give it up after syncLimit ticks and elect another; " +
			"the old leader restarts from its data dir and rejoins as a follower",
		plan:   func(*rand.Rand, PlanParams) Step { return Step{} },
		span:   zkKillSpan,
		inject: runZKKillLeader,
	},
	{
		Name:     "zk-pause-leader",
		Failover: true, Needs: Needs{Topology: TopologyZooKeeper},
		Marks: []Mark{{Event: "pause-node", Heal: "resume-node", Cause: CauseSplitBrain}},
		Doc: "(zookeeper) SIGSTOP the Zab leader for 2-3 election timeouts (syncLimit ticks): the followers elect a new " +
			"leader; SIGCONT and the old one, on an older epoch, steps down",
		plan:   planZKPause,
		span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 4*time.Second },
		inject: runZKPauseLeader,
	},
	{
		Name:     "zk-partition-leader",
		Failover: true, Needs: Needs{Topology: TopologyZooKeeper, Runtime: "docker"},
		Marks: []Mark{{Event: "isolate-leader", Heal: "heal-isolate-leader", Cause: CauseSplitBrain}},
		Doc: "(zookeeper, docker runtime) cut the Zab leader off from the other members and from the clients for longer " +
			"than a session: the followers elect a new leader, the old one's clients move their sessions to it or lose them; heal and it follows",
		plan:   planZKIsolate,
		span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 4*time.Second },
		inject: runZKPartitionLeader,
	},
	{
		Name:  "etcd-clock-bump",
		Needs: Needs{Topology: TopologyEtcd, FakeTime: true},
		Marks: []Mark{{Event: "clock-bump", Heal: "clock-reset", Cause: CauseServerClock}},
		Doc: "(etcd) move a member's wall clock forward: refused, libfaketime cannot move a Go program's clock " +
			"(it reads the vDSO, not libc; verified), and etcd's leases run on monotonic time",
		plan:   clockPlan,
		span:   heldSpan,
		inject: runEtcdClockBump,
	},
}, networkFaults...)

// DBRestarter is an Env that can crash and restart the resource's database
// (the runner: the resource service, which owns its SQLite file).
type DBRestarter interface {
	// RestartDB SIGKILLs the database's owner, waits down, starts it again
	// where it was, and returns once it serves; what says what was restarted.
	RestartDB(ctx context.Context, down time.Duration) (what string, err error)
}

func runRestartDB(ctx context.Context, env Env, s Step) error {
	r, ok := env.(DBRestarter)
	if !ok {
		return fmt.Errorf("this run cannot restart its database")
	}
	logf(env, "restart-db", "resource", "database", "SIGKILL the resource service and its database, down for %v", s.Duration.Round(time.Millisecond))
	what, err := r.RestartDB(ctx, s.Duration)
	if err != nil {
		return err
	}
	logf(env, "db-restarted", "resource", "database", "%s is back", what)
	return nil
}

// Run executes one step; it returns once the fault is healed.
func Run(ctx context.Context, env Env, s Step) error {
	f, err := Lookup(s.Fault)
	if err != nil {
		return err
	}
	if err := f.inject(ctx, env, s); err != nil {
		return fmt.Errorf("fault %s: %w", s.Fault, err)
	}
	return nil
}

func logf(env Env, f, node string, role cluster.Role, format string, a ...any) {
	env.Log(history.Event{F: f, Node: node, Role: string(role), Detail: fmt.Sprintf(format, a...)})
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// failoverAndRejoin waits for Sentinel to promote a replica away from old,
// logs it, and restarts old as a replica of the new primary.
func failoverAndRejoin(ctx context.Context, env Env, old cluster.Node) error {
	c := env.Cluster()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	np, err := c.WaitFailover(wctx, old.Name)
	if err != nil {
		return err
	}
	logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s; %s was primary", np.Name, old.Name)
	if err := c.Restart(ctx, old.Name, cluster.AsReplica); err != nil {
		return err
	}
	logf(env, "restart", old.Name, cluster.RoleReplica, "%s restarted as a replica of %s", old.Name, np.Name)
	return nil
}

func runKillPrimary(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d)", p.Name, p.PID)
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	return failoverAndRejoin(ctx, env, p)
}

// runCutReplication is the sequence that reproduced the double grant 8 of 8
// times on loopback: a naive kill loses nothing, because bytes already in the
// replication socket survive SIGKILL; pausing the replicas first, then dropping
// their links, leaves the lock on the primary alone.
func runCutReplication(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	if err := cutReplicas(ctx, c, p, replicas); err != nil {
		return err
	}
	logf(env, "cut-replication", p.Name, cluster.RolePrimary, "paused %d replicas and dropped their links; %s acknowledges writes nobody copies", len(replicas), p.Name)
	// With long jobs a new grant comes only when a holder finishes; wait for
	// one, or the kill would lose nothing. Under a setting that asks for a
	// replica none can come: the wait ends at the guard's first refusal
	// (awaitGrantAlone), and the primary is killed all the same.
	got, closed, err := awaitGrantAlone(ctx, env, p.Name, nowTrue(), 2*env.TTL()+2*time.Second, closedAlone)
	if err != nil {
		return err
	}
	// Let the lucky holder settle into its job before the primary dies.
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d); an acquire landed after the cut: %v%s", p.Name, p.PID, got, closedNote(closed))
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	_ = sleep(ctx, 50*time.Millisecond)
	for _, r := range replicas {
		if err := c.Resume(r.Name); err != nil {
			return err
		}
	}
	logf(env, "heal-replication", p.Name, cluster.RoleReplica, "resumed %d replicas", len(replicas))
	return failoverAndRejoin(ctx, env, p)
}

// runPromoteReplica is the Sentinel race done by hand. The replicas are
// paused and their links dropped (as cut-replication does), so a grant made
// now lives on the primary alone; once one is made, the operator promotes a
// replica that never saw it. REPLICAOF NO ONE is queued on the stopped
// replica and runs in its first event-loop turn after SIGCONT: resumed
// first, it would reconnect at once and copy the grant before the command
// landed (what cluster.Queued says of TAKEOVER). Then the service address
// moves to it, dropping every client's connection, and the old primary and
// the other replicas are made its replicas.
func runPromoteReplica(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	rp, ok := c.(cluster.Repointer)
	if !ok {
		return fmt.Errorf("promote-replica needs a service address to move (--topology standalone)")
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	if len(replicas) == 0 {
		return fmt.Errorf("promote-replica: %s has no live replica to promote", p.Name)
	}
	r := replicas[0]
	q, err := cluster.DialQueued(ctx, r.Addr)
	if err != nil {
		return err
	}
	defer q.Close()
	if err := cutReplicas(ctx, c, p, replicas); err != nil {
		return err
	}
	logf(env, "promote-replica", p.Name, cluster.RolePrimary, "paused %d replicas and dropped their links; %s acknowledges writes nobody copies", len(replicas), p.Name)
	got, _, err := awaitGrantAlone(ctx, env, p.Name, nowTrue(), 2*env.TTL()+2*time.Second, closedAlone)
	if err != nil {
		return err
	}
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	if err := q.Send("REPLICAOF", "NO", "ONE"); err != nil {
		return err
	}
	if err := c.Resume(r.Name); err != nil {
		return err
	}
	if _, err := q.Reply(ctx); err != nil {
		return fmt.Errorf("REPLICAOF NO ONE on %s: %w", r.Name, err)
	}
	if err := rp.Repoint(r.Name); err != nil {
		return err
	}
	logf(env, "promoted", r.Name, cluster.RolePrimary, "REPLICAOF NO ONE on %s, the service address moved to it (an acquire landed on %s after the cut: %v)", r.Name, p.Name, got)
	host, port, _ := strings.Cut(r.Reach(), ":")
	for _, n := range append([]cluster.Node{p}, replicas[1:]...) {
		if n.Name != p.Name {
			if err := c.Resume(n.Name); err != nil {
				return err
			}
		}
		if _, err := c.Command(ctx, n.Name, "REPLICAOF", host, port); err != nil {
			return fmt.Errorf("demote %s: %w", n.Name, err)
		}
	}
	logf(env, "demote", p.Name, cluster.RoleReplica, "%s and the other replicas now replicate %s; the grant %s held alone is gone", p.Name, r.Name, p.Name)
	return nil
}

func runFastRestart(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	// Strike a lease just granted: its holder has its whole job ahead and
	// its first renewal TTL/3 away. The lock comes back only once a replica
	// has resynced from the empty primary (WAIT needs one), 0.75 or 1.7 s
	// after the kill on this machine; a holder caught at a random moment
	// often renewed first, was told "not held" and stopped (CI: lab 3
	// checked valid), and one caught just after a renewal was often at the
	// end of its job (6 s: 60 steps of 100 ms).
	why, err := awaitFreshGrant(ctx, env, 2*env.TTL()+2*time.Second)
	if err != nil {
		return err
	}
	logf(env, "fast-restart", p.Name, cluster.RolePrimary, "SIGKILL %s and restart it at once with its old config; %s", p.Name, why)
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	if err := c.Restart(ctx, p.Name, cluster.WithOldConfig); err != nil {
		return err
	}
	logf(env, "restarted", p.Name, cluster.RolePrimary, "%s is back, faster than any failover; replicas resync from it", p.Name)
	// Polled, not slept: the fault is over once the replicas have resynced
	// from the empty primary (the runner then waits for Sentinel's view).
	_, err = awaitOnline(ctx, c, p.Name, len(replicasOf(c, p.Name)), 5*time.Second)
	return err
}

// The refusals that close an opportunity: those the fault's own condition
// makes the guard repeat for every grant until the fault heals, so that the
// grant the fault waits for cannot come. With the replicas paused and their
// links dropped the primary has no replica to count (NOREPLICAS) and none to
// acknowledge (WAIT, WAITAOF). Inside a resync window no replica acknowledges
// (none has loaded the RDB, so none sends a REPLCONF ACK), but
// min-replicas-to-write counts them online, judged by the age of their last
// ACK, which a window may or may not outlast: its NOREPLICAS in one window says
// nothing of the next, where the old reference row saw it grant (51-62%
// double-granted). The faults that wait for a fresh grant with the replicas
// linked (fast-restart, partition) end at no refusal: there a WAIT shortfall
// is a slow acknowledgement, and the next grant may well pass.
var (
	closedAlone  = []string{GuardNoReplicas, GuardWait, GuardWaitAOF}
	closedWindow = []string{GuardWait, GuardWaitAOF}
)

// awaitGrantAlone waits up to timeout for an acquire granted after `after` on
// a primary whose replicas the fault cut off, and ends early at the first
// acquire the replication guard refused for one of the closing reasons,
// which it logs as the opportunity closed by the setting (logClosed). An
// error only when ctx ends.
func awaitGrantAlone(ctx context.Context, env Env, primary string, after int64, timeout time.Duration, closing []string) (granted, closed bool, err error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	granted, r := env.AwaitGrant(actx, after, closing)
	cancel()
	if ctx.Err() != nil {
		return false, false, ctx.Err()
	}
	if r != nil {
		logClosed(env, primary, after, *r)
	}
	return granted, r != nil, nil
}

// logClosed records that the setting refused the grant a fault waited for
// (history.NClosedBySetting): the checker and the sweep count these among
// the fault's opportunities, as ones the setting closed.
func logClosed(env Env, primary string, after int64, r Refusal) {
	env.Log(history.Event{F: history.NClosedBySetting, Node: primary, Role: string(cluster.RolePrimary), Key: r.Key, Client: r.Client,
		Detail: fmt.Sprintf("client %d's acquire of %s, invoked %v into the wait, was refused by the replication setting (%s): no grant can land while the fault holds, so the fault goes on without one; the opportunity is closed by the setting",
			r.Client, r.Key, time.Duration(r.Invoked-after).Round(time.Millisecond), r.Error)})
}

// closedNote is the kill event's words for an opportunity the setting closed.
func closedNote(closed bool) string {
	if closed {
		return " (the setting refused it: closed by the setting)"
	}
	return ""
}

// awaitFreshGrant waits up to timeout for a grant made from now on, and says
// which (or that none came) for the fault's log line; an error only when ctx
// ends. The faults that strike a lease just granted use it: its holder has
// its whole job ahead.
func awaitFreshGrant(ctx context.Context, env Env, timeout time.Duration) (string, error) {
	after := nowTrue()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	fresh := env.AwaitAcquire(wctx, after)
	cancel()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if h, ok := newestHolder(env, after); fresh && ok {
		return fmt.Sprintf("client %d was just granted %s", h.Client, h.Key), nil
	}
	return fmt.Sprintf("no lock was granted in %v", timeout.Round(time.Millisecond)), nil
}

// awaitOnline polls the primary's INFO until it lists n replicas online, or
// the timeout passes (false, no error); an error only when ctx ends.
func awaitOnline(ctx context.Context, c cluster.Runtime, primary string, n int, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		inf, err := c.Command(ctx, primary, "INFO", "replication")
		if err == nil && strings.Count(inf, "state=online") >= n {
			return true, nil
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return false, err
		}
	}
	return false, nil
}

func runPausePrimary(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	sleepErr := holdPaused(ctx, env, p, "pause-node", "resume-node", s.Duration)
	if sleepErr != nil {
		return sleepErr
	}
	if np, err := c.Primary(ctx); err == nil && np.Name != p.Name {
		logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s while %s was paused", np.Name, p.Name)
	}
	return nil
}

func pickHolder(ctx context.Context, env Env) (Holder, error) {
	for {
		if hs := env.Holders(); len(hs) > 0 {
			return hs[0], nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return Holder{}, fmt.Errorf("no client held a lock: %w", err)
		}
	}
}

// ClientNode is the node name of client slot c in nemesis events (client-N),
// what the checker reads a client fault's target from.
func ClientNode(c int) string { return fmt.Sprintf("client-%d", c) }

func runPauseClient(ctx context.Context, env Env, s Step) error {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	h, err := pickHolder(hctx, env)
	cancel()
	if err != nil {
		return err
	}
	logf(env, "pause-client", ClientNode(h.Client), "client", "SIGSTOP client %d, holder of %s, for %v (TTL %v)", h.Client, h.Key, s.Duration.Round(time.Millisecond), env.TTL())
	if err := env.PauseClient(h.Client); err != nil {
		return err
	}
	sleepErr := sleep(ctx, s.Duration)
	if err := env.ResumeClient(h.Client); err != nil {
		return err
	}
	logf(env, "resume-client", ClientNode(h.Client), "client", "SIGCONT client %d", h.Client)
	return sleepErr
}

func runClockBump(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	// Logged before the write, as every clock fault's start is: see
	// cluster.Local.setClock.
	logf(env, "clock-bump", p.Name, cluster.RolePrimary, "wall clock of %s moved %ss", p.Name, s.Offset)
	if err := c.SetClockOffset(p.Name, s.Offset); err != nil {
		return err
	}
	sleepErr := sleep(ctx, s.Duration)
	if err := c.SetClockOffset(p.Name, ""); err != nil {
		return err
	}
	logf(env, "clock-reset", p.Name, cluster.RolePrimary, "wall clock of %s back to true time", p.Name)
	return sleepErr
}

func runSkewClient(ctx context.Context, env Env, s Step) error {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	h, err := pickHolder(hctx, env)
	cancel()
	if err != nil {
		return err
	}
	if err := env.SkewClient(h.Client, 0, s.Rate); err != nil {
		return err
	}
	logf(env, "skew-client", ClientNode(h.Client), "client", "client %d's clock now runs at %.2fx", h.Client, s.Rate)
	sleepErr := sleep(ctx, s.Duration)
	if err := env.SkewClient(h.Client, 0, 1); err != nil {
		return err
	}
	logf(env, "unskew-client", ClientNode(h.Client), "client", "client %d's clock back to true rate", h.Client)
	return sleepErr
}

// runPartition needs a runtime that can cut links (cluster.Partitioner: the
// docker runtime); the heal runs even when the run is interrupted, since
// nothing else knows the node is cut off.
func runPartition(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	pc, err := partitioner(c, "node")
	if err != nil {
		return err
	}
	// Cut a lease just granted, so that its holder is mid-job when the
	// clients follow +switch-master, about 3.4 s later (10 runs of seed 1 on
	// docker). Cut at a random moment, the switch of seed 1 came near the end
	// of the first 6.2 s hold; landing just after its release, every client
	// moved to the promoted replica with nobody holding, and the run checked
	// valid (CI, once). Holds of longJob outlast 2 x TTL + 2 s, hence the wait.
	why, err := awaitFreshGrant(ctx, env, 2*env.TTL()+8*time.Second)
	if err != nil {
		return err
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	logf(env, "partition", p.Name, cluster.RolePrimary, "cut %s off from the Sentinels and replicas for %v, the clients still reach it; %s", p.Name, s.Duration.Round(time.Millisecond), why)
	if err := partitionNode(pc, p.Name); err != nil {
		return err
	}
	sleepErr := sleep(ctx, s.Duration)
	if err := pc.Heal(p.Name); err != nil {
		return err
	}
	logf(env, "heal-partition", p.Name, cluster.RolePrimary, "%s reconnected", p.Name)
	if sleepErr != nil {
		return sleepErr
	}
	if np, err := c.Primary(ctx); err == nil && np.Name != p.Name {
		logf(env, history.NFailover, np.Name, cluster.RolePrimary, "Sentinel promoted %s while %s was cut off", np.Name, p.Name)
	}
	return nil
}

// partitioner is the runtime's cluster.Partitioner, or the error that names
// the fix (what: "node", "member").
func partitioner(c cluster.Runtime, what string) (cluster.Partitioner, error) {
	pc, ok := c.(cluster.Partitioner)
	if !ok {
		return nil, fmt.Errorf("this runtime cannot partition a %s: run with --runtime docker", what)
	}
	return pc, nil
}

// partitionNode cuts a node off; a cut that fails half-way is healed at once,
// since nothing else knows what it left cut.
func partitionNode(pc cluster.Partitioner, node string) error {
	if err := pc.Partition(node); err != nil {
		return errors.Join(err, pc.Heal(node))
	}
	return nil
}

// cutReplicas pauses the replicas, then drops their links on the primary:
// bytes already in a replication socket survive SIGKILL and SIGSTOP alike,
// so only both leave a write made now on the primary alone.
func cutReplicas(ctx context.Context, c cluster.Runtime, p cluster.Node, replicas []cluster.Node) error {
	if err := pauseAll(c, replicas); err != nil {
		return err
	}
	_, err := c.Command(ctx, p.Name, "CLIENT", "KILL", "TYPE", "replica")
	return err
}

func pauseAll(c cluster.Runtime, nodes []cluster.Node) error {
	for _, n := range nodes {
		if err := c.Pause(n.Name); err != nil {
			return err
		}
	}
	return nil
}

func replicasOf(c cluster.Runtime, primary string) []cluster.Node {
	var out []cluster.Node
	for _, n := range c.Nodes() {
		if n.Kind != cluster.RoleSentinel && n.Name != primary && n.PID != 0 {
			out = append(out, n)
		}
	}
	return out
}

// runResyncWindow: after a full resync the primary lists a replica online as
// soon as the RDB is sent, but holds the command stream back until the
// replica's first REPLCONF ACK, which it sends only once it has loaded the RDB
// (on Valkey 9 up to ~1 s later: the download finishes in a background thread
// and the replica's once-a-second cron loads it). A lock granted while every
// replica is in that state reaches none of them; SIGKILL the primary and the
// promoted replica never saw it. Sentinel promotes the replica with the
// highest offset, so all replicas must be in the window at once: they are
// made to full-sync together (forceFullSync), and the window is read on both sides: the primary lists
// every replica online while each still reports master_sync_in_progress:1. A grant
// comes only when a holder finishes its job, so one resync rarely has one in
// its window: like cut-replication waiting for a fresh grant on the primary
// alone, the fault resyncs again until an acquire returns ok while every
// replica is still in the window, checked again right before the kill (at
// most resyncTries times, or resyncGiveUp; then it kills anyway and its kill
// event says no acquire landed).
func runResyncWindow(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	logf(env, "resync-window", p.Name, cluster.RolePrimary, "making %d replicas full-sync from %s, until an acquire lands inside the window", len(replicas), p.Name)
	giveUp := time.Now().Add(resyncGiveUp)
	got, closed, tries := false, false, 0
	// moved reports (and logs) a failover Sentinel ran on its own while the
	// resyncs went on: each forks the primary, and on a loaded machine (3
	// trials on 2 cores) Sentinel has judged a primary down a second after
	// promoting it and promoted a resyncing replica, while this fault went
	// on resyncing from, and would have killed, a primary that was no
	// longer the one. Logged by nobody, that failover's split brain was
	// blamed on this fault's window (WAIT 1 10 × resync-window, trial 4 of
	// the row in results/rows/resync-window). The fault ends there without
	// its kill, leaving the old primary to Sentinel to demote.
	moved := func(why error) bool {
		np, perr := c.Primary(ctx)
		if perr != nil || np.Name == p.Name {
			return false
		}
		detail := fmt.Sprintf("Sentinel promoted %s during the resyncs, before any kill (%s, primary until then, was not killed): a failover this fault did not drive", np.Name, p.Name)
		if why != nil {
			detail += fmt.Sprintf(" (%v)", why)
		}
		logf(env, history.NFailover, np.Name, cluster.RolePrimary, "%s", detail)
		return true
	}
	for !got && !closed && tries < resyncTries && (tries == 0 || time.Now().Before(giveUp)) {
		if tries > 0 && moved(nil) {
			return nil
		}
		tries++
		errs := make(chan error, len(replicas))
		for _, r := range replicas {
			go func() { errs <- forceFullSync(ctx, c, r.Name, p.Reach()) }()
		}
		var ferr error
		for range replicas {
			if err := <-errs; err != nil && ferr == nil {
				ferr = err
			}
		}
		if ferr != nil {
			// Such a failover also made a resync step on a replica, by then
			// attached to the new primary, fail (READONLY): not an error
			// of the fault's, and no reason to end the trial.
			if moved(ferr) {
				return nil
			}
			return ferr
		}
		open, err := awaitWindow(ctx, c, p.Name, replicas)
		if err != nil {
			return err
		}
		if !open {
			continue
		}
		// Only a grant at least resyncSettle into the window counts: the
		// holder it replaces renews every TTL/3 and, with jobs that end just
		// after a renewal, renewed ~0.15 s before releasing. Had that
		// renewal made it into the RDB, the promoted replica would keep the
		// old holder's key until about when the new holder's lease ends, and
		// nobody could be granted the lock twice.
		//
		// Under WAIT or WAITAOF no grant can land in a window (no replica
		// acknowledges before it has loaded the RDB), so the first such
		// refusal of an acquire the window would have counted, with every
		// replica still in it, ends the resyncs: the setting refused the grant
		// this fault waits for, and the kill follows as after a grant.
		after := nowTrue() + int64(resyncSettle)
		actx, cancel := context.WithTimeout(ctx, resyncWindow)
		granted, refused := env.AwaitGrant(actx, after, closedWindow)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if (granted || refused != nil) && inWindow(ctx, c, p.Name, replicas) {
			got, closed = granted, refused != nil
			if closed {
				logClosed(env, p.Name, after, *refused)
			}
		}
	}
	if moved(nil) {
		return nil
	}
	logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d) inside the resync window; an acquire landed in it: %v (resync %d)%s", p.Name, p.PID, got, tries, closedNote(closed))
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	logf(env, "resync-done", p.Name, cluster.RolePrimary, "resync window over")
	return failoverAndRejoin(ctx, env, p)
}

// forceFullSync makes a running replica full-sync from the primary: detached
// (REPLICAOF NO ONE), one write of its own puts its offset past anything the
// primary can continue from, and re-attached its PSYNC is refused. A
// restarted replica would do too, but a fresh process on a tiny data set
// often syncs and loads within ~40 ms: no window to speak of. A running
// replica loads the received RDB only at its next once-a-second cron, so its
// window lasts up to ~1 s.
//
// Detached, the replica is a primary without replicas, and under the setting
// a cell measures, min-replicas-to-write, it refuses that write (NOREPLICAS:
// every resync-window trial of those cells ended with no verdict). So the
// setting is lifted on the replica for the write and put back as soon as it
// is attached again, before it could be promoted; it is put back even when a
// step fails.
func forceFullSync(ctx context.Context, c cluster.Runtime, replica, primaryAddr string) (err error) {
	host, port, _ := strings.Cut(primaryAddr, ":")
	minReplicas := "0"
	if v, err := c.Command(ctx, replica, "CONFIG", "GET", "min-replicas-to-write"); err != nil {
		return fmt.Errorf("force a full sync of %s: %w", replica, err)
	} else if _, n, ok := strings.Cut(v, "\n"); ok {
		minReplicas = strings.TrimSpace(n)
	}
	steps := [][]string{{"REPLICAOF", "NO", "ONE"}, {"SET", "lockjepsen:resync", "diverge"}, {"REPLICAOF", host, port}}
	if minReplicas != "0" {
		steps = slices.Insert(steps, 1, []string{"CONFIG", "SET", "min-replicas-to-write", "0"})
		defer func() {
			// Even when the trial is ending: the node must not keep a
			// setting the cell does not measure.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if _, rerr := c.Command(rctx, replica, "CONFIG", "SET", "min-replicas-to-write", minReplicas); rerr != nil && err == nil {
				err = fmt.Errorf("force a full sync of %s: put min-replicas-to-write %s back: %w", replica, minReplicas, rerr)
			}
		}()
	}
	for _, cmd := range steps {
		if _, err := c.Command(ctx, replica, cmd...); err != nil {
			return fmt.Errorf("force a full sync of %s: %w", replica, err)
		}
	}
	return nil
}

// awaitWindow polls until every replica is in the resync window (true), or
// one of them got out of it first, or 10 s passed (false: resync again).
func awaitWindow(ctx context.Context, c cluster.Runtime, primary string, replicas []cluster.Node) (bool, error) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		switch windowState(ctx, c, primary, replicas) {
		case windowOpen:
			return true, nil
		case windowMissed:
			return false, nil
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return false, err
		}
	}
	return false, nil
}

const (
	windowNotYet = iota // some replica still connecting or receiving
	windowOpen          // every replica has the RDB, none has loaded it
	windowMissed        // some replica already loaded it: streaming began
)

// windowState reads the window on both sides: the primary lists every
// replica online (the RDB sent), and every replica still reports
// master_sync_in_progress:1 (not loaded, so not acknowledged, so the primary
// has streamed it nothing since). The primary's acknowledged offset is no
// guide: it stays 0 until the replica's next once-a-second ACK, well after
// streaming began.
func windowState(ctx context.Context, c cluster.Runtime, primary string, replicas []cluster.Node) int {
	inf, err := c.Command(ctx, primary, "INFO", "replication")
	if err != nil {
		return windowNotYet
	}
	online := strings.Count(inf, "state=online") >= len(replicas)
	for _, r := range replicas {
		// A restarted node's cached admin connection fails once, then
		// reconnects.
		ri, err := c.Command(ctx, r.Name, "INFO", "replication")
		if err != nil {
			ri, err = c.Command(ctx, r.Name, "INFO", "replication")
		}
		switch {
		case err != nil:
			return windowNotYet
		case strings.Contains(ri, "master_link_status:up"):
			return windowMissed
		case !strings.Contains(ri, "master_sync_in_progress:1"):
			return windowNotYet
		}
	}
	if !online {
		return windowNotYet
	}
	return windowOpen
}

// inWindow: every replica still in the window, right before the kill.
func inWindow(ctx context.Context, c cluster.Runtime, primary string, replicas []cluster.Node) bool {
	return windowState(ctx, c, primary, replicas) == windowOpen
}

// An acquire must return between resyncSettle and resyncWindow after the
// window opened (the window lasts ~0.6-1 s here); the window is checked again
// after it, right before the kill. A grant lands in that part of a window
// about one resync in ten: the fault gives up after resyncTries resyncs or
// resyncGiveUp.
const (
	resyncSettle = 250 * time.Millisecond
	resyncWindow = 900 * time.Millisecond
	resyncTries  = 40
	resyncGiveUp = 45 * time.Second
)

func runPauseReplicas(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	for _, r := range replicas {
		if err := c.Pause(r.Name); err != nil {
			return err
		}
	}
	logf(env, "pause-replicas", p.Name, cluster.RolePrimary, "SIGSTOP %d replicas of %s for %v", len(replicas), p.Name, s.Duration.Round(time.Millisecond))
	sleepErr := sleep(ctx, s.Duration)
	for _, r := range replicas {
		if err := c.Resume(r.Name); err != nil {
			return err
		}
	}
	logf(env, "resume-replicas", p.Name, cluster.RolePrimary, "SIGCONT %d replicas", len(replicas))
	return sleepErr
}

// runClockStrobe flips the primary's clock so that leases there expire early
// in bursts; offsets are written atomically (libfaketime exits the server on
// a half-written file).
func runClockStrobe(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	logf(env, "clock-strobe", p.Name, cluster.RolePrimary, "wall clock of %s flips between +0 and %ss every 200ms for %v", p.Name, s.Offset, s.Duration.Round(time.Millisecond))
	end := time.Now().Add(s.Duration)
	on := false
	var loopErr error
	for time.Now().Before(end) && loopErr == nil {
		on = !on
		off := ""
		if on {
			off = s.Offset
		}
		if err := c.SetClockOffset(p.Name, off); err != nil {
			return err
		}
		loopErr = sleep(ctx, 200*time.Millisecond)
	}
	if err := c.SetClockOffset(p.Name, ""); err != nil {
		return err
	}
	logf(env, "clock-reset", p.Name, cluster.RolePrimary, "wall clock of %s back to true time", p.Name)
	return loopErr
}

// runReplicaClock: Valkey sends SET ... PX to replicas as SET ... PXAT, an
// absolute time on the primary's clock, and a promoted replica then judges
// it by its own clock. One replica gets a skewed clock and is made the only
// candidate (replica-priority 0 on the others, waited for until every
// Sentinel has read it: Sentinels refresh a replica's INFO every 10 s), a
// fresh grant is awaited, and the primary is killed.
func runReplicaClock(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := replicasOf(c, p.Name)
	if len(replicas) == 0 {
		return fmt.Errorf("no replica to promote")
	}
	target := replicas[0]
	setPriorities := func(target string) error {
		for _, r := range replicas {
			prio := "100"
			if target != "" && r.Name != target {
				prio = "0"
			}
			if _, err := c.Command(ctx, r.Name, "CONFIG", "SET", "replica-priority", prio); err != nil {
				return err
			}
		}
		return nil
	}
	if err := setPriorities(target.Name); err != nil {
		return err
	}
	defer func() { _ = setPriorities("") }()
	if err := awaitSentinelPriorities(ctx, c, target.Name); err != nil {
		return err
	}
	// Logged before the write: see cluster.Local.setClock.
	logf(env, "replica-clock", target.Name, cluster.RoleReplica, "wall clock of replica %s moved %ss; it is the only replica Sentinel may promote", target.Name, s.Offset)
	if err := c.SetClockOffset(target.Name, s.Offset); err != nil {
		return err
	}
	since := nowTrue()
	actx, cancel := context.WithTimeout(ctx, 2*env.TTL()+2*time.Second)
	got := env.AwaitAcquire(actx, since)
	cancel()
	// Let the grant reach the replica before the primary dies: here the lock
	// is not lost, it is judged by another clock.
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	logf(env, "kill", p.Name, cluster.RolePrimary, "SIGKILL %s (pid %d); a fresh grant before it: %v", p.Name, p.PID, got)
	if err := c.Kill(p.Name); err != nil {
		return err
	}
	ferr := failoverAndRejoin(ctx, env, p)
	// Hold the skew a while after the promotion, then undo it: the lesson
	// is the grants the promoted clock judged.
	_ = sleep(ctx, 3*time.Second)
	if err := c.SetClockOffset(target.Name, ""); err != nil {
		return err
	}
	logf(env, "replica-clock-reset", target.Name, cluster.RolePrimary, "wall clock of %s back to true time", target.Name)
	return ferr
}

// awaitSentinelPriorities waits until every Sentinel lists the other
// replicas with priority 0, so that the coming failover can only pick target.
func awaitSentinelPriorities(ctx context.Context, c cluster.Runtime, target string) error {
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	want := 0
	for _, n := range c.Nodes() {
		if n.Kind != cluster.RoleSentinel && n.Name != target && n.PID != 0 {
			want++
		}
	}
	want-- // the primary is not a replica
	for {
		ok := true
		for _, n := range c.Nodes() {
			if n.Kind != cluster.RoleSentinel {
				continue
			}
			out, err := c.Command(wctx, n.Name, "SENTINEL", "REPLICAS", cluster.MasterName)
			if err != nil || zeroPriorities(out) < want {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if err := sleep(wctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("Sentinels did not learn the replica priorities: %w", err)
		}
	}
}

// zeroPriorities counts the replicas a SENTINEL REPLICAS reply (flattened to
// field and value lines) lists with priority 0; the field is slave-priority
// in Sentinel's reply, replica-priority in newer spellings.
func zeroPriorities(reply string) int {
	f := strings.Split(reply, "\n")
	n := 0
	for i := 0; i+1 < len(f); i += 2 {
		if (f[i] == "slave-priority" || f[i] == "replica-priority") && f[i+1] == "0" {
			n++
		}
	}
	return n
}

// holdPaused SIGSTOPs a node for d and SIGCONTs it, logging the fault and its
// heal under the given event names (the marks its fault declares). The
// resume runs even when ctx ends, so no node is left stopped; the error is
// the pause's or the interruption's.
func holdPaused(ctx context.Context, env Env, n cluster.Node, pause, resume string, d time.Duration) error {
	c := env.Cluster()
	logf(env, pause, n.Name, cluster.RolePrimary, "SIGSTOP %s for %v", n.Name, d.Round(time.Millisecond))
	if err := c.Pause(n.Name); err != nil {
		return err
	}
	sleepErr := sleep(ctx, d)
	if err := c.Resume(n.Name); err != nil {
		return err
	}
	logf(env, resume, n.Name, cluster.RolePrimary, "SIGCONT %s", n.Name)
	return sleepErr
}
