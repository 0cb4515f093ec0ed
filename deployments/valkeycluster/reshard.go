package valkeycluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/truetime"
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

// beginMove waits, as the failover faults do, for a client to be granted
// the lock (the holder then renews through the whole move), and plans the
// move from the cluster's view at that moment.
func beginMove(ctx context.Context, env nemesis.Env) (m SlotMove, granted bool, err error) {
	actx, cancel := context.WithTimeout(ctx, 2*env.TTL()+2*time.Second)
	granted = env.AwaitAcquire(actx, truetime.Now())
	cancel()
	if err := ctx.Err(); err != nil {
		return m, granted, err
	}
	m, err = PlanSlotMove(ctx, env.Cluster(), LockKey)
	return m, granted, err
}

var faultMigrateSlot = &nemesis.Fault{
	Name:  "migrate-slot",
	Needs: nemesis.Needs{Topology: Topology}, MovesPrimary: true,
	Marks: []nemesis.Mark{{Event: "migrate-slot", Heal: "migrate-slot-done", Cause: marks.CauseReshard}},
	Doc: "(cluster) legacy resharding under a held lock: after a fresh grant, the lock key's slot opened on its shard " +
		"(SETSLOT MIGRATING) and the next (IMPORTING) for 1.5 to 2 TTLs, its keys MIGRATEd half a TTL in, then SETSLOT NODE",
	// The window: 1.5 to 2 TTLs, four and a half to six renew periods:
	// long enough that the holder's job (about a TTL in the reshard
	// scenarios) ends with its release inside, and the next clients'
	// acquires run there too.
	PlanStep: func(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
		return nemesis.Step{Duration: p.TTL*3/2 + time.Duration(rng.Int64N(int64(p.TTL/2)+1))}
	},
	// The fresh grant (well under a TTL with 8 clients), the window, the close.
	Span:   func(s nemesis.Step, p nemesis.PlanParams) time.Duration { return p.TTL + s.Duration + 2*time.Second },
	Inject: runMigrateSlot,
}

// runMigrateSlot is the legacy move with its window held open for the
// step's duration (a few renew periods): the holder's extends, its release
// and the next clients' acquires run while the source and the target share
// the slot. The keys (the lock and its fence counter) move half a TTL into
// the window, between two of the holder's renewals (every TTL/3 from its
// grant, just before the window opened): one extend runs on the source
// before the MIGRATE, the next on the target after it.
func runMigrateSlot(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	c := env.Cluster()
	m, got, err := beginMove(ctx, env)
	if err != nil {
		return err
	}
	if err := m.Open(ctx, c); err != nil {
		return err
	}
	nemesis.Logf(env, "migrate-slot", m.Src.Name, cluster.RolePrimary,
		"%s opened: %s MIGRATING, %s IMPORTING, for %v; a client was granted the lock just before: %v",
		m, m.Src.Name, m.Dst.Name, s.Duration.Round(time.Millisecond), got)
	// Whatever stops the window early (the run's end, an error), the slot is
	// closed: an open slot would outlive the run's checks.
	moved, werr := 0, nemesis.Sleep(ctx, env.TTL()/2)
	if werr == nil {
		moved, werr = m.MigrateKeys(ctx, c, migrated(env, m))
	}
	if werr == nil {
		werr = nemesis.Sleep(ctx, s.Duration-env.TTL()/2)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n, cerr := m.Close(cctx, c, migrated(env, m))
	nemesis.Logf(env, "migrate-slot-done", m.Dst.Name, cluster.RolePrimary, "%s closed: SETSLOT NODE %s on %s; %d key(s) moved: %v",
		m, m.Dst.Name, nodeNames(m.Primaries), moved+n, errText(cerr))
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

// migrated logs each MIGRATE batch of a move.
func migrated(env nemesis.Env, m SlotMove) func(keys []string, reply string) {
	return func(keys []string, reply string) {
		nemesis.Logf(env, "slot-keys-migrated", m.Src.Name, cluster.RolePrimary, "MIGRATE %s to %s: %s (%s)", strings.Join(keys, " "), m.Dst.Name, reply,
			"the source now answers ASK for them, the target serves them after ASKING")
	}
}

var faultMigrateSlotAtomic = &nemesis.Fault{
	Name:  "migrate-slot-atomic",
	Needs: nemesis.Needs{Topology: Topology}, MovesPrimary: true,
	Marks: []nemesis.Mark{{Event: "migrate-slot-atomic", Heal: "migrate-slot-atomic-done", Cause: marks.CauseReshard}},
	Doc: "(cluster) atomic slot migration under a held lock: after a fresh grant, CLUSTER MIGRATESLOTS moves the " +
		"lock key's slot to the next shard, awaited until CLUSTER GETSLOTMIGRATIONS reports it done",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return p.TTL + 3*time.Second },
	Inject:   runMigrateSlotAtomic,
}

// runMigrateSlotAtomic is the atomic move, awaited until the source's
// CLUSTER GETSLOTMIGRATIONS reports the job over.
func runMigrateSlotAtomic(ctx context.Context, env nemesis.Env, _ nemesis.Step) error {
	c := env.Cluster()
	m, got, err := beginMove(ctx, env)
	if err != nil {
		return err
	}
	before, err := slotMigrations(ctx, c, m.Src.Name)
	if err != nil {
		return err
	}
	slot := strconv.Itoa(m.Slot)
	nemesis.Logf(env, "migrate-slot-atomic", m.Src.Name, cluster.RolePrimary,
		"%s: CLUSTER MIGRATESLOTS SLOTSRANGE %s %s NODE %s on %s; a client was granted the lock just before: %v",
		m, slot, slot, m.Dst.Name, m.Src.Name, got)
	start := time.Now()
	if _, err := c.Command(ctx, m.Src.Name, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", slot, slot, "NODE", m.DstID()); err != nil {
		nemesis.Logf(env, "migrate-slot-atomic-done", m.Src.Name, cluster.RolePrimary, "%s refused: %v", m, err)
		return fmt.Errorf("CLUSTER MIGRATESLOTS on %s: %w", m.Src.Name, err)
	}
	// Awaited past the run's end too: the job runs on in the server anyway,
	// and the checks after the run want the slot settled.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	job, err := awaitSlotMigration(wctx, c, m.Src.Name, before)
	nemesis.Logf(env, "migrate-slot-atomic-done", m.Dst.Name, cluster.RolePrimary, "%s: job %.8s %s after %v (%s)",
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
		if err := nemesis.Sleep(ctx, 20*time.Millisecond); err != nil {
			return job, fmt.Errorf("the migration from %s is still %q: %w", node, job["state"], err)
		}
	}
}
