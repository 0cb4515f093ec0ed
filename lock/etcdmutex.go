package lock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// FenceEtcdRevision is recipe etcd-mutex's fence source: the lock key's create revision (Raft's log order).
const FenceEtcdRevision = "etcd-revision"

// etcdMutexRecipe is the recipe's catalog entry (recipes, config.go).
var etcdMutexRecipe = Recipe{Name: EtcdMutex, Summary: "etcd's concurrency.Mutex (official client v3) on a session lease, fence = the lock key's create revision (no Valkey)", Ours: true, Lacks: func(Caps) []string { return nil }, open: openEtcdMutex, Speaks: []endpoint.Protocol{endpoint.Etcd}, Server: checkEtcd, Fence: FenceEtcdRevision, Valid: (*Config).validateEtcd, FenceOnDemand: true, HostsExec: true, Library: Library{Module: "go.etcd.io/etcd/client/v3", Name: "etcd client"},
	conform: func(c Config) (server, error) { return newEtcdServer(c) }}

// EtcdMutex is the etcd recipe.
const EtcdMutex = "etcd-mutex"

// etcdMutex is the official client's concurrency.Mutex on a session lease:
//
//   - acquire: grant a lease of ceil(TTL) seconds (etcd's unit; the server
//     raises it to its minimum, 2 s with lockjepsen's Raft timing), open a
//     concurrency.Session on it and TryLock: a txn that creates
//     <key>/<lease> if absent and owns the lock when that key has the lowest
//     create revision under the prefix. A held lock is a plain fail (TryLock
//     deletes its key and answers ErrLocked); the client loop retries.
//   - fence: the lock key's create revision, the txn's header revision (the
//     key is new with every acquire, one session each). Revisions are Raft's
//     log order, so they never go backwards, across leader changes too.
//   - extend: the session keeps the lease alive by itself (KeepAlive every
//     TTL/3, as any program using the library does); the client's extend is
//     one more KeepAliveOnce, a round trip through the leader that restarts
//     the lease's TTL and records in the history that the lease was alive
//     then. "requested lease not found" is a definite loss (fail, not held).
//   - release: delete <key>/<lease> (what Mutex.Unlock sends; done here to
//     see the deleted count: 0 means the lease had already expired, a fail,
//     not held), then revoke the lease.
//
// Outcomes: a lease grant that fails wrote no lock key (fail); a txn, a
// delete or a keepalive that timed out or lost its connection may have taken
// effect (info); an answer from the server is definite.
type etcdMutex struct {
	cfg Config
	cli *clientv3.Client

	mu    sync.Mutex
	holds map[string]*etcdHold // token -> its session, from acquire to release
}

type etcdHold struct {
	s *concurrency.Session
	m *concurrency.Mutex
}

func openEtcdMutex(cfg Config) (Lock, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Service.Addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd: %w", err)
	}
	return &etcdMutex{cfg: cfg, cli: cli, holds: map[string]*etcdHold{}}, nil
}

func (l *etcdMutex) Recipe() string                      { return EtcdMutex }
func (l *etcdMutex) SelfRenewing() bool                  { return false }
func (l *etcdMutex) Lost(string, string) <-chan struct{} { return nil }
func (l *etcdMutex) SafeRelease() bool                   { return true }
func (l *etcdMutex) Observe(Observer)                    {}

func (l *etcdMutex) Close() {
	l.mu.Lock()
	for _, h := range l.holds {
		h.s.Orphan()
	}
	l.holds = map[string]*etcdHold{}
	l.mu.Unlock()
	_ = l.cli.Close()
}

// EtcdTTLSeconds is the lease asked of etcd for a TTL: whole seconds,
// rounded up, at least 1, so the server's lease is never shorter than the
// client's.
func EtcdTTLSeconds(ttl time.Duration) int {
	return max(1, int(math.Ceil(ttl.Seconds())))
}

// etcdResult maps an etcd client error: the server's own refusals are
// definite (fail), a timeout or a lost connection is unknown (info).
func etcdResult(what string, err error) Result {
	if err == nil {
		return ok()
	}
	err = fmt.Errorf("%s: %w", what, err)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
		return fail(fmt.Errorf("%w (%w)", err, ErrNotHeld))
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Result{history.Info, err}
	}
	if _, isServer := err.(rpctypes.EtcdError); isServer {
		return fail(err)
	}
	return Result{history.Info, err}
}

func (l *etcdMutex) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	lease, err := l.cli.Grant(ctx, int64(EtcdTTLSeconds(ttl)))
	if err != nil {
		// No lock key was written: a lease granted unseen expires unused.
		return 0, fail(fmt.Errorf("lease grant: %w", err))
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(EtcdTTLSeconds(ttl)))
	if err != nil {
		_, _ = l.cli.Revoke(context.Background(), lease.ID)
		return 0, fail(fmt.Errorf("session: %w", err))
	}
	m := concurrency.NewMutex(s, key)
	err = m.TryLock(ctx)
	switch {
	case errors.Is(err, concurrency.ErrLocked):
		l.revoke(s)
		return 0, fail(fmt.Errorf("TryLock: another client holds the lock"))
	case err != nil:
		// The txn may have created our key (and made us owner): keep the
		// session so that the release after an info revokes it.
		l.keep(token, s, m)
		return 0, Result{history.Info, fmt.Errorf("TryLock: %w", err)}
	}
	l.keep(token, s, m)
	if !l.cfg.Fencing {
		return 0, ok()
	}
	// Our key is new (one lease per acquire), so its create revision is the
	// revision of the txn that created it.
	return m.Header().Revision, ok()
}

func (l *etcdMutex) keep(token string, s *concurrency.Session, m *concurrency.Mutex) {
	l.mu.Lock()
	l.holds[token] = &etcdHold{s: s, m: m}
	l.mu.Unlock()
}

func (l *etcdMutex) hold(token string) *etcdHold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds[token]
}

func (l *etcdMutex) revoke(s *concurrency.Session) {
	s.Orphan() // stop the keepalive
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = l.cli.Revoke(ctx, s.Lease())
}

func (l *etcdMutex) Extend(ctx context.Context, key, token string, _ time.Duration) Result {
	h := l.hold(token)
	if h == nil {
		return fail(fmt.Errorf("KeepAliveOnce: no session for this token (%w)", ErrRefused))
	}
	_, err := l.cli.KeepAliveOnce(ctx, h.s.Lease())
	return etcdResult("KeepAliveOnce", err)
}

func (l *etcdMutex) Release(ctx context.Context, key, token string) Result {
	h := l.hold(token)
	if h == nil {
		return fail(fmt.Errorf("release: no session for this token (%w)", ErrRefused))
	}
	l.mu.Lock()
	delete(l.holds, token)
	l.mu.Unlock()
	defer l.revoke(h.s)
	// One txn: who owns the lock (the key of lowest create revision under the
	// prefix, as concurrency.Mutex decides), then delete our key. After an
	// acquire whose outcome was lost (info), our key may exist as a waiter's,
	// behind another client's: deleting it frees nothing, so that release
	// must not report ok (the checker would read a release of the holder's
	// lock; seen when a partition cut the Raft leader off mid-TryLock).
	mine := h.m.Key()
	pfx := key + "/"
	resp, err := l.cli.Txn(ctx).Then(clientv3.OpGet(pfx, clientv3.WithFirstCreate()...), clientv3.OpDelete(mine)).Commit()
	if err != nil {
		return etcdResult("delete "+mine, err)
	}
	owner := ""
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		owner = string(kvs[0].Key)
	}
	switch {
	case resp.Responses[1].GetResponseDeleteRange().GetDeleted() == 0:
		return fail(fmt.Errorf("delete %s: no such key, the lease had expired (%w)", mine, ErrNotHeld))
	case owner != mine:
		return fail(fmt.Errorf("delete %s: it was a waiter's key, %s owned the lock (%w)", mine, owner, ErrNotHeld))
	}
	return ok()
}

// checkEtcd is the capability check of the etcd recipe: every endpoint
// answers Status.
func checkEtcd(ctx context.Context, cfg Config) (Caps, error) {
	caps := Caps{Product: "etcd"}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Service.Addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return caps, fmt.Errorf("connect to etcd: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, ep := range cfg.Service.Addrs {
		s, err := cli.Status(ctx, ep)
		if err != nil {
			return caps, fmt.Errorf("etcd %s: %w", ep, err)
		}
		caps.Version = s.Version
	}
	return caps, nil
}

func (c *Config) validateEtcd() error {
	switch {
	case c.Service.Protocol != endpoint.Etcd || len(c.Service.Addrs) == 0:
		return fmt.Errorf("recipe %s: no etcd endpoints (--topology etcd starts the members)", c.Recipe)
	case c.Wait.On() || c.WaitAOF.On():
		return fmt.Errorf("recipe %s cannot WAIT or WAITAOF: etcd commits every write through Raft before it answers", c.Recipe)
	}
	return nil
}

func init() { registerRecipes(etcdMutexRecipe) }
