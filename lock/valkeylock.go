package lock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeylock"
)

// vlock drives valkey-go's valkeylock unchanged with KeyMajority 1 (one
// Sentinel-managed primary, so one key: valkeylock:0:<key>). The library
// makes its own random value and extends the lease by itself every
// RenewEvery; the caller's token names the acquisition in the history.
//
// To put the library's background extends and its release in the history,
// the valkey.Client it is built on is wrapped (LockerOption.ClientBuilder):
// the wrapper recognises the library's scripts by SHA-1 and reports them. The
// commands are passed through untouched.
type vlock struct {
	locker valkeylock.Locker
	ttl    time.Duration

	mu    sync.Mutex
	held  map[string]*vheld // by caller's key
	obs   Observer
	lkKey func(string) string
}

type vheld struct {
	token  string
	ctx    context.Context
	cancel context.CancelFunc
	// release is what the library's delete script replied, seen by the wrapper.
	release *Result
}

// The library's scripts, copied from valkeylock v1.0.79 so that the wrapper
// can recognise them; if a later version changes them, its extends simply go
// unreported (the test TestValkeylockObserved catches that).
var (
	vlExtendSHA = sha1hex(`if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`)
	vlDeleteSHA = sha1hex(`if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`)
)

func sha1hex(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) }

const vlPrefix = "valkeylock"

func openValkeylock(cfg Config) (Lock, error) {
	if cfg.TTL <= 0 {
		return nil, fmt.Errorf("valkeylock needs the lease length when the locker is made (Config.TTL)")
	}
	o := cfg.clientOption()
	// The library relies on client-side caching (invalidations wake waiters
	// and cancel lost locks) and on its retryable scripts: its defaults, not ours.
	o.DisableCache, o.DisableRetry = false, false
	l := &vlock{ttl: cfg.TTL, held: map[string]*vheld{}}
	l.lkKey = func(k string) string { return vlPrefix + ":0:" + k }
	lo := valkeylock.LockerOption{
		ClientOption:   o,
		KeyPrefix:      vlPrefix,
		KeyMajority:    1,
		KeyValidity:    cfg.TTL,
		ExtendInterval: cfg.RenewEvery,
		NoLoopTracking: true,
		ClientBuilder: func(opt valkey.ClientOption) (valkey.Client, error) {
			c, err := valkey.NewClient(opt)
			if err != nil {
				return nil, err
			}
			return &observed{Client: c, l: l}, nil
		},
	}
	if cfg.OpTimeout > 0 {
		lo.TryNextAfter = cfg.OpTimeout
	}
	lk, err := valkeylock.NewLocker(lo)
	if err != nil {
		return nil, fmt.Errorf("valkeylock.NewLocker: %w", err)
	}
	l.locker = lk
	return l, nil
}

func (l *vlock) Recipe() string     { return Valkeylock }
func (l *vlock) SelfRenewing() bool { return true }
func (l *vlock) SafeRelease() bool  { return true }
func (l *vlock) Close()             { l.locker.Close() }

func (l *vlock) Observe(fn Observer) { l.mu.Lock(); l.obs = fn; l.mu.Unlock() }

func (l *vlock) Lost(key, token string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.held[key]; h != nil && h.token == token {
		return h.ctx.Done()
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

func (l *vlock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	if ttl != l.ttl {
		return 0, fail(fmt.Errorf("valkeylock's lease is fixed at %v when the locker is made, asked %v: %w", l.ttl, ttl, ErrRefused))
	}
	// The lock's context must outlive this call: its parent is Background, and
	// the library bounds the attempt itself (TryNextAfter).
	_ = ctx
	lctx, cancel, err := l.locker.TryWithContext(context.Background(), key)
	if err != nil {
		err = fmt.Errorf("valkeylock TryWithContext: %w", err)
		if errors.Is(err, valkeylock.ErrNotLocked) {
			return 0, fail(err)
		}
		return 0, result(err)
	}
	l.mu.Lock()
	l.held[key] = &vheld{token: token, ctx: lctx, cancel: cancel}
	l.mu.Unlock()
	return 0, ok()
}

func (l *vlock) Extend(context.Context, string, string, time.Duration) Result {
	return fail(fmt.Errorf("valkeylock extends its own leases: %w", ErrRefused))
}

// Release cancels the lock's context; the library then runs its delete
// script and the returned cancel waits for it. Its reply, seen by the
// wrapper, is the release's outcome.
func (l *vlock) Release(_ context.Context, key, token string) Result {
	l.mu.Lock()
	h := l.held[key]
	if h == nil || h.token != token {
		l.mu.Unlock()
		return fail(fmt.Errorf("valkeylock release: not held: %w", ErrRefused))
	}
	lostBefore := h.ctx.Err() != nil
	l.mu.Unlock()
	h.cancel()
	l.mu.Lock()
	delete(l.held, key)
	rel := h.release
	l.mu.Unlock()
	switch {
	case rel != nil:
		return *rel
	case lostBefore:
		return fail(errors.New("valkeylock had already given the lock up (lost or expired) before release"))
	}
	return Result{history.Info, errors.New("valkeylock release: the library's delete was not seen")}
}

// observed wraps the locker's client to report the library's own commands.
type observed struct {
	valkey.Client
	l *vlock
}

func (o *observed) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	args := cmd.Commands()
	// EVALSHA sha 1 key val deadline (or EVAL src 1 key ...)
	if len(args) < 5 || (args[0] != "EVALSHA" && args[0] != "EVAL") {
		return o.Client.Do(ctx, cmd)
	}
	sha := args[1]
	if args[0] == "EVAL" {
		sha = sha1hex(args[1])
	}
	if sha != vlExtendSHA && sha != vlDeleteSHA {
		return o.Client.Do(ctx, cmd)
	}
	lkKey := args[3]
	key := strings.TrimPrefix(lkKey, vlPrefix+":0:")
	o.l.mu.Lock()
	h, obs := o.l.held[key], o.l.obs
	o.l.mu.Unlock()
	if h == nil {
		return o.Client.Do(ctx, cmd)
	}
	if sha == vlExtendSHA && obs != nil {
		obs(history.FExtend, key, h.token, history.Invoke, o.l.ttl, nil)
	}
	resp := o.Client.Do(ctx, cmd)
	v, err := resp.AsInt64()
	var r Result
	if err != nil {
		r = result(err)
	} else if v == 0 {
		r = fail(errors.New("valkeylock script returned 0: the key no longer holds this lock's value"))
	} else {
		r = ok()
	}
	if sha == vlExtendSHA {
		if obs != nil {
			obs(history.FExtend, key, h.token, r.Outcome, o.l.ttl, r.Err)
		}
	} else {
		o.l.mu.Lock()
		h.release = &r
		o.l.mu.Unlock()
	}
	return resp
}
