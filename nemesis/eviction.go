package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
)

// The memory-pressure fault: a shared cache's burst on the lock's primary.
// The cache workload is valkey-benchmark, a real process writing as a
// cache's clients would: 1 KiB values, half of them with a TTL of an hour
// (longer than any lock's, so volatile-ttl prefers the locks) and half with
// none (which no volatile-* policy may evict). Measured on a bare Valkey
// 9.1.2 with maxmemory 8mb and volatile-ttl: a lock key set with PX 6000 was
// the first key evicted, then every TTL'd cache entry, then the writes were
// refused with OOM.

// cachePrefix names every cache entry, so that the drain deletes them and
// nothing else.
const cachePrefix = "cache:"

// evictedChannel is where a node with notify-keyspace-events Ee (set with
// --maxmemory) publishes each evicted key of database 0.
const evictedChannel = "__keyevent@0__:evicted"

var faultMemoryPressure = &Fault{
	Name:  "memory-pressure",
	Needs: Needs{MaxMemory: true, Runtime: cluster.RuntimeLocal},
	Marks: []Mark{{Event: "memory-pressure", Heal: "memory-drained", Cause: marks.CauseEviction}},
	Doc: "a shared cache's burst on the primary while a lock is held: valkey-benchmark writes 1 KiB entries (half with " +
		"a 1 h TTL, half with none) to 1.5x --maxmemory, then the cache is drained; logs evicted_keys and which lock keys went",
	PlanStep: pressurePlan,
	Span:     pressureSpan,
	Inject:   runMemoryPressure,
	Restore:  drainCache,
}

func runMemoryPressure(ctx context.Context, env Env, s Step) error {
	return pressure(ctx, env, s, false)
}

var faultMemoryPressureDedicated = &Fault{
	Name:  "memory-pressure-dedicated",
	Needs: Needs{MaxMemory: true, Runtime: cluster.RuntimeLocal},
	Marks: []Mark{{Event: "memory-pressure-dedicated", Heal: "memory-pressure-dedicated-drained", Cause: marks.CauseEviction}},
	Doc: "the same cache burst on a cache instance of its own (a standalone Valkey with the same --maxmemory and " +
		"policy): the lock's nodes are a dedicated lock instance; their evicted_keys are logged before and after",
	PlanStep: pressurePlan,
	Span:     pressureSpan,
	Inject:   runMemoryPressureDedicated,
}

// runMemoryPressureDedicated is the same burst on a cache instance of its
// own (cluster.CacheHost): the lock's primary, with the same memory knobs,
// is watched for evictions all the same.
func runMemoryPressureDedicated(ctx context.Context, env Env, s Step) error {
	return pressure(ctx, env, s, true)
}

// pressure writes the burst to the lock's primary, or with dedicated to the
// cache instance, while a lock is held, and watches the lock's primary for
// evicted lock keys either way.
func pressure(ctx context.Context, env Env, s Step, dedicated bool) error {
	c := env.Cluster()
	ld, ok := c.(cluster.Loader)
	if !ok {
		return fmt.Errorf("memory-pressure needs a runtime that runs valkey-benchmark (--runtime local)")
	}
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	target := p.Name
	if dedicated {
		ch, ok := c.(cluster.CacheHost)
		if !ok {
			return fmt.Errorf("memory-pressure-dedicated needs a runtime that starts a cache instance (--runtime local)")
		}
		if target, err = ch.Cache(ctx); err != nil {
			return err
		}
	}
	limit, policy, err := memoryLimit(ctx, c, target)
	if err != nil {
		return err
	}
	// A lock held at the burst is what an eviction can lose.
	after := nowTrue()
	actx, cancel := context.WithTimeout(ctx, 2*env.TTL()+2*time.Second)
	got := env.AwaitAcquire(actx, after)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	before, err := cluster.InfoField(ctx, c, p.Name, "stats", "evicted_keys")
	if err != nil {
		return err
	}
	// The cache instance's own count, to show the burst did evict there
	// (shared, the target is the primary just read).
	var cacheBefore int64
	if dedicated {
		if cacheBefore, err = cluster.InfoField(ctx, c, target, "stats", "evicted_keys"); err != nil {
			return err
		}
	}
	// Which lock keys go, as the node says, while the pressure lasts.
	stopWatch := watchEvictions(ctx, env, c, p.Name, policy)
	entries := int(limit * 3 / 2 / 1024)
	event, healed, where := "memory-pressure", "memory-drained", "on "+p.Name
	if dedicated {
		event, healed = "memory-pressure-dedicated", "memory-pressure-dedicated-drained"
		where = fmt.Sprintf("on the cache instance %s (not on the lock's primary %s)", target, p.Name)
	}
	Logf(env, event, target, cluster.RolePrimary,
		"a cache burst %s: %d entries of 1 KiB (half with a 1 h TTL, half with none) past maxmemory %d MiB (policy %s); a lock was granted just before: %v",
		where, entries, limit>>20, policy, got)
	full, rounds, loadErr := burst(ctx, ld, target, entries, s.Duration)
	sleepErr := ctx.Err()
	locks := stopWatch()
	drainErr := drainNode(context.WithoutCancel(ctx), c, target)
	after2, _ := cluster.InfoField(context.WithoutCancel(ctx), c, p.Name, "stats", "evicted_keys")
	others := ""
	if dedicated {
		n, _ := cluster.InfoField(context.WithoutCancel(ctx), c, target, "stats", "evicted_keys")
		others = fmt.Sprintf(" (the cache instance's: %d -> %d)", cacheBefore, n)
	}
	Logf(env, healed, target, cluster.RolePrimary,
		"cache entries deleted from %s after %d rounds of writes; on the lock's primary %s evicted_keys %d -> %d (+%d)%s, lock keys evicted: %d %v; writes refused with OOM during the burst: %v",
		target, rounds, p.Name, before, after2, after2-before, others, len(locks), locks, full)
	for _, e := range []error{loadErr, drainErr, sleepErr} {
		if e != nil {
			return e
		}
	}
	return nil
}

// memoryLimit reads the primary's maxmemory and policy.
func memoryLimit(ctx context.Context, c cluster.Runtime, node string) (int64, string, error) {
	out, err := c.Command(ctx, node, "CONFIG", "GET", "maxmemory")
	if err != nil {
		return 0, "", err
	}
	f := strings.Fields(out)
	if len(f) < 2 {
		return 0, "", fmt.Errorf("CONFIG GET maxmemory on %s: %q", node, out)
	}
	limit, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || limit == 0 {
		return 0, "", fmt.Errorf("%s has no maxmemory (%q): add --maxmemory", node, out)
	}
	pol, err := c.Command(ctx, node, "CONFIG", "GET", "maxmemory-policy")
	if err != nil {
		return 0, "", err
	}
	pf := strings.Fields(pol)
	if len(pf) < 2 {
		return 0, "", fmt.Errorf("CONFIG GET maxmemory-policy on %s: %q", node, pol)
	}
	return limit, pf[1], nil
}

// The burst's length, and what it occupies: the fresh grant, the burst,
// the lock's lease running out after an eviction, the drain.
// watchEvictions logs each lock key the primary evicts (its keyspace
// events, where the runtime can watch them) until the returned stop, which
// lists them.
func watchEvictions(ctx context.Context, env Env, c cluster.Runtime, primary, policy string) (stop func() []string) {
	var mu sync.Mutex
	var evicted []string
	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	if w, ok := c.(cluster.Watcher); ok {
		go func() {
			defer close(watched)
			_ = w.Watch(wctx, primary, evictedChannel, func(key string) {
				if strings.HasPrefix(key, cachePrefix) {
					return
				}
				mu.Lock()
				evicted = append(evicted, key)
				mu.Unlock()
				env.Log(history.Event{F: history.NEvicted, Node: primary, Key: key, Role: string(cluster.RolePrimary),
					Detail: fmt.Sprintf("%s evicted %s (maxmemory-policy %s)", primary, key, policy)})
			})
		}()
	} else {
		close(watched)
	}
	return func() []string {
		cancel()
		<-watched
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evicted)
	}
}

// burst fills the node, then keeps writing for d, as a cache's clients go
// on writing: each eviction makes room for more and may take another lock
// key. valkey-benchmark stops at its first OOM reply (noeviction, or a
// volatile-* policy out of keys with a TTL), exit 1: the node is full, as
// meant, and the next round pushes again. full: some write was refused.
func burst(ctx context.Context, ld cluster.Loader, target string, entries int, d time.Duration) (full bool, rounds int, err error) {
	for end := time.Now().Add(d); rounds == 0 || time.Now().Before(end); rounds++ {
		n := entries
		if rounds > 0 {
			n = entries / 4
		}
		out, lerr := ld.Load(ctx, target, "-c", "4", "-P", "16", "-n", strconv.Itoa(n), "-r", "1000000000", "-d", "1024", "-q",
			"SET", cachePrefix+"ttl:__rand_int__", "__data__", "EX", "3600", ";", "SET", cachePrefix+"__rand_int__", "__data__")
		if strings.Contains(out, "OOM") {
			full, lerr = true, nil
			if Sleep(ctx, 50*time.Millisecond) != nil {
				break
			}
		}
		if lerr != nil || ctx.Err() != nil {
			err = lerr
			break
		}
	}
	return full, rounds, err
}

func pressurePlan(rng *rand.Rand, _ PlanParams) Step {
	return Step{Duration: 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))}
}

func pressureSpan(s Step, p PlanParams) time.Duration { return s.Duration + 2*p.TTL + 4*time.Second }

// drainCache deletes every cache entry on the primary: the fault's heal
// when a run ends in the middle of it. (The dedicated burst needs none: its
// instance stops with the run.)
func drainCache(ctx context.Context, env Env) error {
	c := env.Cluster()
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	return drainNode(ctx, c, p.Name)
}

// drainNode deletes every cache entry on a node (SCAN and UNLINK, so that no
// lock key is touched): the burst is over, the cache below its limit again.
func drainNode(ctx context.Context, c cluster.Runtime, node string) error {
	cursor := "0"
	for {
		out, err := c.Command(ctx, node, "SCAN", cursor, "MATCH", cachePrefix+"*", "COUNT", "1000")
		if err != nil {
			return fmt.Errorf("drain the cache on %s: %w", node, err)
		}
		lines := strings.Fields(out)
		if len(lines) == 0 {
			return fmt.Errorf("drain the cache on %s: SCAN answered %q", node, out)
		}
		if keys := lines[1:]; len(keys) > 0 {
			if _, err := c.Command(ctx, node, append([]string{"UNLINK"}, keys...)...); err != nil {
				return fmt.Errorf("drain the cache on %s: %w", node, err)
			}
		}
		if cursor = lines[0]; cursor == "0" {
			return nil
		}
	}
}
