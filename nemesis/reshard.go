package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Resharding under a held lock (--topology cluster): the lock key's slot
// moves from its shard to the next one while a client holds the lock and
// renews it. Valkey 9 moves a slot in two ways (Valkey docs, "Atomic slot
// migration" and CLUSTER SETSLOT's live resharding section):
//
//   - legacy: the slot is opened on both sides (SETSLOT IMPORTING on the
//     target, MIGRATING on the source), its keys are moved with MIGRATE,
//     and SETSLOT NODE closes it. While it is open the source serves the
//     keys it still has, answers ASK for those it has not, the target
//     serves a key only after ASKING, and a command on several keys that
//     are not all on one side answers TRYAGAIN;
//   - atomic (Valkey 9.0): CLUSTER MIGRATESLOTS on the source copies the
//     slot to the target in the background while the source serves it,
//     pauses the source's writes for the last bytes and hands the slot over
//     in one step.
//
// Each injection is one move to the next primary by name; nothing moves the
// slot back, so the next injection starts from where this one left it, as
// successive reshards of a real cluster do.

// slotMove is one move of the lock key's slot.
type slotMove struct {
	slot         int
	src, dst     cluster.Node
	srcID, dstID string
	// primaries are every primary serving slots: each is told the new owner
	// when a legacy move closes, as the cluster spec's resharding steps do.
	primaries []cluster.Node
	ids       map[string]string // node name -> cluster node ID
}

func (m slotMove) String() string {
	return fmt.Sprintf("slot %d (%s) from %s to %s", m.slot, cluster.LockKey, m.src.Name, m.dst.Name)
}

// planSlotMove reads, from the lock key's primary, who serves what, and
// picks the next primary by name as the target.
func planSlotMove(ctx context.Context, c cluster.Runtime) (slotMove, error) {
	sc, ok := c.(cluster.Sharded)
	if !ok {
		return slotMove{}, fmt.Errorf("this runtime has no shards: the migration faults need --topology cluster")
	}
	sh, err := sc.Shard(ctx, cluster.LockKey)
	if err != nil {
		return slotMove{}, fmt.Errorf("the shard of %s: %w", cluster.LockKey, err)
	}
	out, err := c.Command(ctx, sh.Primary.Name, "CLUSTER", "NODES")
	if err != nil {
		return slotMove{}, fmt.Errorf("CLUSTER NODES on %s: %w", sh.Primary.Name, err)
	}
	m := slotMove{slot: sh.Slot, src: sh.Primary, ids: map[string]string{}}
	for _, v := range cluster.ParseClusterNodes(out) {
		if !v.Primary || v.Failing || len(v.Slots) == 0 {
			continue
		}
		for _, n := range c.Nodes() {
			if n.Addr == v.Addr && n.Kind != cluster.RoleSentinel {
				m.primaries = append(m.primaries, n)
				m.ids[n.Name] = v.ID
			}
		}
	}
	slices.SortFunc(m.primaries, func(a, b cluster.Node) int { return strings.Compare(a.Name, b.Name) })
	i := slices.IndexFunc(m.primaries, func(n cluster.Node) bool { return n.Name == sh.Primary.Name })
	if i < 0 || len(m.primaries) < 2 {
		return m, fmt.Errorf("%s sees %d healthy primaries serving slots (itself among them: %v): a move needs another", sh.Primary.Name, len(m.primaries), i >= 0)
	}
	m.dst = m.primaries[(i+1)%len(m.primaries)]
	m.srcID, m.dstID = m.ids[m.src.Name], m.ids[m.dst.Name]
	return m, nil
}

// beginMove waits, as the failover faults do, for a client to be granted
// the lock (the holder then renews through the whole move), and plans the
// move from the cluster's view at that moment.
func beginMove(ctx context.Context, env Env) (m slotMove, granted bool, err error) {
	actx, cancel := context.WithTimeout(ctx, 2*env.TTL()+2*time.Second)
	granted = env.AwaitAcquire(actx, nowTrue())
	cancel()
	if err := ctx.Err(); err != nil {
		return m, granted, err
	}
	m, err = planSlotMove(ctx, env.Cluster())
	return m, granted, err
}

var faultMigrateSlot = &Fault{
	Name:  "migrate-slot",
	Needs: Needs{Topology: TopologyCluster}, MovesPrimary: true,
	Marks: []Mark{{Event: "migrate-slot", Heal: "migrate-slot-done", Cause: marks.CauseReshard}},
	Doc: "(cluster) legacy resharding under a held lock: after a fresh grant, the lock key's slot opened on its shard " +
		"(SETSLOT MIGRATING) and the next (IMPORTING) for 1.5 to 2 TTLs, its keys MIGRATEd half a TTL in, then SETSLOT NODE",
	// The window: 1.5 to 2 TTLs, four and a half to six renew periods:
	// long enough that the holder's job (about a TTL in the reshard
	// scenarios) ends with its release inside, and the next clients'
	// acquires run there too.
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: p.TTL*3/2 + time.Duration(rng.Int64N(int64(p.TTL/2)+1))}
	},
	// The fresh grant (well under a TTL with 8 clients), the window, the close.
	Span:   func(s Step, p PlanParams) time.Duration { return p.TTL + s.Duration + 2*time.Second },
	Inject: runMigrateSlot,
}

// runMigrateSlot is the legacy move with its window held open for the
// step's duration (a few renew periods): the holder's extends, its release
// and the next clients' acquires run while the source and the target share
// the slot. The keys (the lock and its fence counter) move half a TTL into
// the window, between two of the holder's renewals (every TTL/3 from its
// grant, just before the window opened): one extend runs on the source
// before the MIGRATE, the next on the target after it.
func runMigrateSlot(ctx context.Context, env Env, s Step) error {
	c := env.Cluster()
	m, got, err := beginMove(ctx, env)
	if err != nil {
		return err
	}
	slot := strconv.Itoa(m.slot)
	// The target first: a source that answered ASK before the target was
	// importing would send the client to a node that answers MOVED back.
	if _, err := c.Command(ctx, m.dst.Name, "CLUSTER", "SETSLOT", slot, "IMPORTING", m.srcID); err != nil {
		return fmt.Errorf("SETSLOT %s IMPORTING on %s: %w", slot, m.dst.Name, err)
	}
	if _, err := c.Command(ctx, m.src.Name, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.dstID); err != nil {
		_, _ = c.Command(context.WithoutCancel(ctx), m.dst.Name, "CLUSTER", "SETSLOT", slot, "STABLE")
		return fmt.Errorf("SETSLOT %s MIGRATING on %s: %w", slot, m.src.Name, err)
	}
	logf(env, "migrate-slot", m.src.Name, cluster.RolePrimary,
		"%s opened: %s MIGRATING, %s IMPORTING, for %v; a client was granted the lock just before: %v",
		m, m.src.Name, m.dst.Name, s.Duration.Round(time.Millisecond), got)
	// Whatever stops the window early (the run's end, an error), the slot is
	// closed: an open slot would outlive the run's checks.
	moved, werr := 0, Sleep(ctx, env.TTL()/2)
	if werr == nil {
		moved, werr = migrateKeys(ctx, env, m)
	}
	if werr == nil {
		werr = Sleep(ctx, s.Duration-env.TTL()/2)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n, cerr := closeSlot(cctx, env, m)
	logf(env, "migrate-slot-done", m.dst.Name, cluster.RolePrimary, "%s closed: SETSLOT NODE %s on %s; %d key(s) moved: %v",
		m, m.dst.Name, nodeNames(m.primaries), moved+n, errText(cerr))
	if werr != nil && ctx.Err() == nil {
		return werr
	}
	return cerr
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// migrateKeys moves every key of the slot from the source to the target
// with MIGRATE ... KEYS, in batches as valkey-cli does; both lock and fence
// counter share the slot, so they move in one MIGRATE.
func migrateKeys(ctx context.Context, env Env, m slotMove) (int, error) {
	c := env.Cluster()
	host, port, _ := strings.Cut(m.dst.Addr, ":")
	moved := 0
	for range 100 {
		out, err := c.Command(ctx, m.src.Name, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.slot), "100")
		if err != nil {
			return moved, fmt.Errorf("GETKEYSINSLOT %d on %s: %w", m.slot, m.src.Name, err)
		}
		keys := strings.Fields(out)
		if len(keys) == 0 {
			return moved, nil
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)
		r, err := c.Command(ctx, m.src.Name, args...)
		if err != nil {
			return moved, fmt.Errorf("MIGRATE %v from %s to %s: %w", keys, m.src.Name, m.dst.Name, err)
		}
		moved += len(keys)
		logf(env, "slot-keys-migrated", m.src.Name, cluster.RolePrimary, "MIGRATE %s to %s: %s (%s)", strings.Join(keys, " "), m.dst.Name, r,
			"the source now answers ASK for them, the target serves them after ASKING")
	}
	return moved, fmt.Errorf("slot %d on %s still has keys after 100 MIGRATE rounds", m.slot, m.src.Name)
}

// closeSlot moves what the source still holds, then assigns the slot to the
// target: the target first (it stops needing ASKING), the source next (it
// answers MOVED from then on), then every other primary.
func closeSlot(ctx context.Context, env Env, m slotMove) (int, error) {
	c := env.Cluster()
	n, err := migrateKeys(ctx, env, m)
	if err != nil {
		return n, err
	}
	order := []cluster.Node{m.dst, m.src}
	for _, p := range m.primaries {
		if p.Name != m.dst.Name && p.Name != m.src.Name {
			order = append(order, p)
		}
	}
	for _, p := range order {
		if _, err := c.Command(ctx, p.Name, "CLUSTER", "SETSLOT", strconv.Itoa(m.slot), "NODE", m.dstID); err != nil {
			return n, fmt.Errorf("SETSLOT %d NODE %s on %s: %w", m.slot, m.dst.Name, p.Name, err)
		}
	}
	return n, nil
}

var faultMigrateSlotAtomic = &Fault{
	Name:  "migrate-slot-atomic",
	Needs: Needs{Topology: TopologyCluster}, MovesPrimary: true,
	Marks: []Mark{{Event: "migrate-slot-atomic", Heal: "migrate-slot-atomic-done", Cause: marks.CauseReshard}},
	Doc: "(cluster) atomic slot migration under a held lock: after a fresh grant, CLUSTER MIGRATESLOTS moves the " +
		"lock key's slot to the next shard, awaited until CLUSTER GETSLOTMIGRATIONS reports it done",
	PlanStep: func(*rand.Rand, PlanParams) Step { return Step{} },
	Span:     func(_ Step, p PlanParams) time.Duration { return p.TTL + 3*time.Second },
	Inject:   runMigrateSlotAtomic,
}

// runMigrateSlotAtomic is the atomic move, awaited until the source's
// CLUSTER GETSLOTMIGRATIONS reports the job over.
func runMigrateSlotAtomic(ctx context.Context, env Env, _ Step) error {
	c := env.Cluster()
	m, got, err := beginMove(ctx, env)
	if err != nil {
		return err
	}
	before, err := slotMigrations(ctx, c, m.src.Name)
	if err != nil {
		return err
	}
	slot := strconv.Itoa(m.slot)
	logf(env, "migrate-slot-atomic", m.src.Name, cluster.RolePrimary,
		"%s: CLUSTER MIGRATESLOTS SLOTSRANGE %s %s NODE %s on %s; a client was granted the lock just before: %v",
		m, slot, slot, m.dst.Name, m.src.Name, got)
	start := time.Now()
	if _, err := c.Command(ctx, m.src.Name, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", slot, slot, "NODE", m.dstID); err != nil {
		logf(env, "migrate-slot-atomic-done", m.src.Name, cluster.RolePrimary, "%s refused: %v", m, err)
		return fmt.Errorf("CLUSTER MIGRATESLOTS on %s: %w", m.src.Name, err)
	}
	// Awaited past the run's end too: the job runs on in the server anyway,
	// and the checks after the run want the slot settled.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	job, err := awaitSlotMigration(wctx, c, m.src.Name, before)
	logf(env, "migrate-slot-atomic-done", m.dst.Name, cluster.RolePrimary, "%s: job %.8s %s after %v (%s)",
		m, job["name"], job["state"], time.Since(start).Round(time.Millisecond), errText(err))
	if err != nil {
		return err
	}
	if job["state"] != "success" {
		return fmt.Errorf("atomic migration of %s ended %s: %s", m, job["state"], job["message"])
	}
	return nil
}

// slotMigrations is CLUSTER GETSLOTMIGRATIONS on node: one map per job.
// The admin connection speaks RESP2, so each job's map arrives as a flat
// field, value list, and the jobs one after another; a job begins at its
// "name" field.
func slotMigrations(ctx context.Context, c cluster.Runtime, node string) ([]map[string]string, error) {
	out, err := c.Command(ctx, node, "CLUSTER", "GETSLOTMIGRATIONS")
	if err != nil {
		return nil, fmt.Errorf("CLUSTER GETSLOTMIGRATIONS on %s: %w", node, err)
	}
	return parseSlotMigrations(out), nil
}

func parseSlotMigrations(out string) []map[string]string {
	var jobs []map[string]string
	if out == "" {
		return nil
	}
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if lines[i] == "name" {
			jobs = append(jobs, map[string]string{})
		}
		if len(jobs) > 0 {
			jobs[len(jobs)-1][lines[i]] = lines[i+1]
		}
	}
	return jobs
}

// awaitSlotMigration polls the source until the job that was not there
// before ends (success, failed or cancelled).
func awaitSlotMigration(ctx context.Context, c cluster.Runtime, node string, before []map[string]string) (map[string]string, error) {
	seen := map[string]bool{}
	for _, j := range before {
		seen[j["name"]] = true
	}
	job := map[string]string{}
	for {
		jobs, err := slotMigrations(ctx, c, node)
		if err == nil {
			for _, j := range jobs {
				if !seen[j["name"]] && j["operation"] == "EXPORT" {
					job = j
				}
			}
			switch job["state"] {
			case "success", "failed", "cancelled":
				return job, nil
			}
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return job, fmt.Errorf("the migration from %s is still %q: %w", node, job["state"], err)
		}
	}
}
