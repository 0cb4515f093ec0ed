package scenario

import (
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
)

// Locks lost without a failover: the lock shares a cache's memory limit
// (--maxmemory 16mb on every node) and the memory-pressure fault bursts the
// cache past it while a lock is held. Which policy loses the lock is the
// lesson; "min-replicas-to-write ... suits a dedicated lock instance better
// than a shared cache" is the same lesson from another side. They join the
// table in scenario.go.
const cacheLimit = 16 << 20

// evictionRun is the shape every eviction scenario shares: long jobs, so
// that the holder whose key was evicted is still at work when the next
// client is granted the free lock.
func evictionRun(policy, teaches, expect string, e Expectation) Scenario {
	return Scenario{
		Teaches: teaches, Faults: []string{"memory-pressure"}, Clients: 8, Keys: 1, TTL: 6 * time.Second,
		TimeLimit: 25 * time.Second, Interval: 6 * time.Second, Job: LongJob,
		MaxMemory: cacheLimit, MaxMemoryPolicy: policy, Expect: expect, expect: e,
	}
}

var evictionScenarios = map[string]Scenario{
	"eviction-volatile-ttl": evictionRun("volatile-ttl",
		"a lock in a shared cache under volatile-ttl: the cache's burst past maxmemory evicts the key with the shortest "+
			"TTL first, the held lock, and the lock is granted again with no failover at all",
		"lock invalid (double grant, eviction)", Always(LockIs(checker.Invalid), DoubleGrantBy("eviction"))),
	"eviction-volatile-lru": evictionRun("volatile-lru",
		"the managed services' default policy, volatile-lru: the burst evicts the least recently used keys that have "+
			"a TTL, among them the held lock's key, renewed a second or two ago, and the lock is granted again",
		"lock invalid (double grant, eviction)", Always(LockIs(checker.Invalid), DoubleGrantBy("eviction"))),
	"eviction-allkeys-lru": evictionRun("allkeys-lru",
		"allkeys-lru: any key may go, the cache's entries without a TTL too; the held lock's key is one of many",
		"lock invalid (double grant, eviction)", Always(LockIs(checker.Invalid), DoubleGrantBy("eviction"))),
	"eviction-noeviction": evictionRun("noeviction",
		"noeviction: the full node refuses writes with OOM instead of evicting; no lock is lost, acquires and extends "+
			"are refused while the cache is full (the availability cost)",
		"lock valid (no double grant; acquires refused with OOM)", Always(LockIs(checker.Valid), NoDoubleGrant())),
	// The control: the same policy and limit on the lock's nodes, the burst on
	// a cache instance of its own. Lock and resource valid, and the lock's
	// primary evicts nothing (its evicted_keys, logged before and after).
	"eviction-dedicated": func() Scenario {
		s := evictionRun("volatile-lru",
			"the article's dedicated lock instance: the same cache burst, under the managed default volatile-lru, lands "+
				"on a cache instance of its own; the lock's nodes, with the same memory limit, evict nothing and no lock is lost",
			"lock valid, resource valid (the lock's primary evicts nothing)",
			Always(LockIs(checker.Valid), NoDoubleGrant(), ResourceIs(checker.Valid)))
		s.Faults = []string{"memory-pressure-dedicated"}
		return s
	}(),
}

func init() {
	for k, v := range evictionScenarios {
		all[k] = v
	}
}
