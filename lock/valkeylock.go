package lock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
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
	// retried holds the commands (by argv) the client is retrying after
	// a try that ended in a transport error: that try may have run.
	retried map[string]bool
	// acqRetried is, by caller's key, whether the last acquire script
	// had such a try before its reply.
	acqRetried map[string]bool
	// validity is, by token, what was left of the lease when the last ok
	// acquire or extend returned (ValidityReporter).
	validity map[string]time.Duration
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
	vlExtendSHA  = sha1hex(`if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`)
	vlDeleteSHA  = sha1hex(`if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`)
	vlAcquireSHA = sha1hex(`local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`)
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
	l := &vlock{ttl: cfg.TTL, held: map[string]*vheld{}, retried: map[string]bool{}, acqRetried: map[string]bool{},
		validity: map[string]time.Duration{}}
	l.lkKey = func(k string) string { return vlPrefix + ":0:" + k }
	lo := valkeylock.LockerOption{
		ClientOption:   o,
		KeyPrefix:      vlPrefix,
		KeyMajority:    1,
		KeyValidity:    cfg.TTL,
		ExtendInterval: cfg.RenewEvery,
		NoLoopTracking: true,
		ClientBuilder: func(opt valkey.ClientOption) (valkey.Client, error) {
			opt.RetryDelay = l.retryDelay
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

// retryDelay is valkey-go's default retry delay (exponential from 2 µs
// with equal jitter, at most 1 s; its defaultRetryDelayFn is unexported),
// and it notes that cmd is being retried: the library's scripts are
// retryable, so after a lost connection the client sends them again on a
// new one, and the reply the caller gets is the last try's. The first try
// may have run: net-timeout, seed 1, client 0's delete ran at once (client 5
// was granted the key 20 ms later), its reply stalled until the heal closed
// the connection, and the retry found client 5's value and returned 0.
func (l *vlock) retryDelay(attempts int, cmd valkey.Completed, _ error) time.Duration {
	l.noteRetry(cmd.Commands())
	return retryBackoff(attempts)
}

// noteRetry notes a retry of args when they run one of the library's scripts.
func (l *vlock) noteRetry(args []string) {
	if scriptSHA(args) != "" {
		l.mu.Lock()
		l.retried[commandID(args)] = true
		l.mu.Unlock()
	}
}

// retryBackoff is valkey-go's defaultRetryDelayFn.
func retryBackoff(attempts int) time.Duration {
	base := 1 << min(20, attempts)
	return min(time.Second, time.Duration(base+rand.IntN(base))*time.Microsecond)
}

// commandID names a command by its argv. The wrapper takes it before Do:
// valkey-go recycles a command that succeeded, blanking its argv.
func commandID(args []string) string { return strings.Join(args, "\x00") }

// tookRetry says whether the command (by id) had a try before the reply
// now in hand, and forgets it.
func (l *vlock) tookRetry(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.retried[id]
	delete(l.retried, id)
	return r
}

// scriptResult classifies the reply of the library's extend or delete
// script: 1 did it; 0 says the key does not hold this lock's value now,
// which proves nothing happened only when no earlier try of the same
// command may have run (retried false). After a retry, a 0 is what the
// script answers when its first try already deleted the key (or extended
// it, and it has since gone), so the outcome is unknown.
func scriptResult(v int64, err error, retried bool) Result {
	switch {
	case err != nil:
		return result(err)
	case v != 0:
		return ok()
	case retried:
		return Result{history.Info, errors.New("valkeylock script returned 0 on a retry: an earlier try, its reply lost, may have done it")}
	}
	return fail(errors.New("valkeylock script returned 0: the key no longer holds this lock's value"))
}

// acquireResult classifies TryWithContext's error. The library reports a
// nil reply of its SET NX as ErrNotLocked; after a retry that nil can be
// its own first try's key (the library then neither holds nor deletes it,
// and it lingers for a TTL), so it is unknown rather than refused.
func acquireResult(err error, retried bool) Result {
	switch {
	case err == nil:
		return ok()
	case errors.Is(err, valkeylock.ErrNotLocked) && retried:
		return Result{history.Info, fmt.Errorf("%w, on a retry: an earlier try, its reply lost, may have set the key", err)}
	case errors.Is(err, valkeylock.ErrNotLocked):
		return contended(err)
	}
	return result(err)
}

// leftOf is what remains of a lease whose deadline the library fixed at
// or after start, when its reply came at end. The library's deadlines are
// absolute (SET ... PXAT, PEXPIREAT, from time.Now() before it sends), so a
// reply that took long leaves a shorter lease than the TTL counted from
// when the command ran, which is what ttl_ms alone tells the checker.
// net-timeout, seed 5: an acquire called at 8.678 s ran after another
// client's release at 9.094 s and returned at 9.114 s; the key expired at
// 11.678 s, and a grant at 11.691 s was legal, but with the TTL counted
// from when it ran the checker called it not linearizable. Never below
// 1 ms: validity_ms 0 means no validity reported (the TTL).
func leftOf(ttl time.Duration, start, end time.Time) time.Duration {
	return max(time.Millisecond, ttl-end.Sub(start))
}

// Validity implements ValidityReporter.
func (l *vlock) Validity(token string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validity[token]
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
	l.mu.Lock()
	delete(l.acqRetried, key)
	l.mu.Unlock()
	start := time.Now()
	lctx, cancel, err := l.locker.TryWithContext(context.Background(), key)
	if err != nil {
		l.mu.Lock()
		retried := l.acqRetried[key]
		l.mu.Unlock()
		return 0, acquireResult(fmt.Errorf("valkeylock TryWithContext: %w", err), retried)
	}
	l.mu.Lock()
	l.held[key] = &vheld{token: token, ctx: lctx, cancel: cancel}
	l.validity[token] = leftOf(l.ttl, start, time.Now())
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
	delete(l.validity, token)
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

// scriptSHA is the SHA-1 of the library's script that args run (EVALSHA
// sha 1 key val deadline, or EVAL src 1 key ...), "" for anything else.
func scriptSHA(args []string) string {
	if len(args) < 5 || (args[0] != "EVALSHA" && args[0] != "EVAL") {
		return ""
	}
	sha := args[1]
	if args[0] == "EVAL" {
		sha = sha1hex(args[1])
	}
	switch sha {
	case vlAcquireSHA, vlExtendSHA, vlDeleteSHA:
		return sha
	}
	return ""
}

func (o *observed) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	args := cmd.Commands()
	sha := scriptSHA(args)
	if sha == "" {
		return o.Client.Do(ctx, cmd)
	}
	id, key := commandID(args), strings.TrimPrefix(args[3], vlPrefix+":0:")
	if sha == vlAcquireSHA {
		resp := o.Client.Do(ctx, cmd)
		if o.l.tookRetry(id) {
			o.l.mu.Lock()
			o.l.acqRetried[key] = true
			o.l.mu.Unlock()
		}
		return resp
	}
	o.l.mu.Lock()
	h, obs := o.l.held[key], o.l.obs
	o.l.mu.Unlock()
	if h == nil {
		resp := o.Client.Do(ctx, cmd)
		o.l.tookRetry(id)
		return resp
	}
	if sha == vlExtendSHA && obs != nil {
		obs(history.FExtend, key, h.token, history.Invoke, o.l.ttl, nil)
	}
	start := time.Now()
	resp := o.Client.Do(ctx, cmd)
	v, err := resp.AsInt64()
	r := scriptResult(v, err, o.l.tookRetry(id))
	if sha == vlExtendSHA && r.Ok() {
		o.l.mu.Lock()
		o.l.validity[h.token] = leftOf(o.l.ttl, start, time.Now())
		o.l.mu.Unlock()
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
