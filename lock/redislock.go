package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/redis/go-redis/v9"
)

// Redislock is github.com/bsm/redislock, driven unchanged on go-redis, the
// client it is written for (its RedisClient is go-redis's Scripter).
const Redislock = "redislock"

// bsmLock holds one *redislock.Lock per token: the library's Refresh and
// Release are methods of the lock Obtain returned. The caller's token is the
// library's (Options.Token), so the history's token is the value stored.
//
// What the library does that matters under faults, read from its source
// (v0.9.4): Obtain is one script, SET NX PX, else, if the stored value
// begins with this token, SET PX again — so an Obtain retried after a lost
// reply re-takes its own lock instead of failing; Refresh is a
// compare-and-PEXPIRE script answering ErrNotObtained when the value is not
// ours; Release a compare-and-DEL answering ErrLockNotHeld. It never renews by
// itself and has no fencing token.
type bsmLock struct {
	rc redis.UniversalClient
	c  *redislock.Client

	mu    sync.Mutex
	locks map[string]*redislock.Lock // by token
}

func openRedislock(cfg Config) (Lock, error) {
	rc := redis.NewUniversalClient(cfg.goRedisOptions())
	return &bsmLock{rc: rc, c: redislock.New(rc), locks: map[string]*redislock.Lock{}}, nil
}

// goRedisOptions are go-redis's defaults, as a team runs them (its own
// retries included: the library's scripts are safe to retry, and a retried
// Obtain after a lost reply re-takes the caller's own lock), with one
// exception: ContextTimeoutEnabled, so that the client's per-operation
// deadline bounds a call as it does for every other recipe; without it go-redis
// waits out its 3 s ReadTimeout whatever the context says.
func (c *Config) goRedisOptions() *redis.UniversalOptions {
	o := &redis.UniversalOptions{ContextTimeoutEnabled: true}
	// go-redis's default dial timeout, through the dial map (--net-proxy)
	// and the reply faults' hook.
	d := net.Dialer{Timeout: 5 * time.Second}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return hookConn(d.DialContext(ctx, network, c.dial(addr)))
	}
	switch c.Service.Protocol {
	case endpoint.Valkey:
		o.Addrs = []string{c.Service.Addr()}
	case endpoint.Cluster:
		o.Addrs = append([]string(nil), c.Service.Addrs...)
		o.IsClusterMode = true
	default:
		o.Addrs = append([]string(nil), c.Service.Addrs...)
		o.MasterName = c.Service.Master()
	}
	return o
}

func (l *bsmLock) Recipe() string                      { return Redislock }
func (l *bsmLock) SelfRenewing() bool                  { return false }
func (l *bsmLock) Lost(string, string) <-chan struct{} { return nil }
func (l *bsmLock) SafeRelease() bool                   { return true }
func (l *bsmLock) Observe(Observer)                    {}
func (l *bsmLock) Close()                              { l.rc.Close() }

func (l *bsmLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	lk, err := l.c.Obtain(ctx, key, ttl, &redislock.Options{Token: token})
	if errors.Is(err, redislock.ErrNotObtained) {
		return 0, contended(fmt.Errorf("redislock Obtain: %w", err))
	}
	if err != nil {
		return 0, goRedisResult("redislock Obtain", err)
	}
	l.mu.Lock()
	l.locks[token] = lk
	l.mu.Unlock()
	return 0, ok()
}

// held finds the lock Obtain returned for token. After an Obtain that
// ended in an error the library handed back no lock, even if the script ran:
// its caller can neither refresh nor release it, and the key lingers for its
// TTL. So are the ones here: refused before sending.
func (l *bsmLock) held(key, token string) *redislock.Lock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lk, found := l.locks[token]; found {
		return lk
	}
	return nil
}

func (l *bsmLock) Extend(ctx context.Context, key, token string, ttl time.Duration) Result {
	lk := l.held(key, token)
	if lk == nil {
		return fail(fmt.Errorf("redislock Refresh: no lock obtained for this token: %w", ErrRefused))
	}
	return goRedisResult("redislock Refresh", lk.Refresh(ctx, ttl, nil))
}

func (l *bsmLock) Release(ctx context.Context, key, token string) Result {
	lk := l.held(key, token)
	if lk == nil {
		return fail(fmt.Errorf("redislock Release: no lock obtained for this token: %w", ErrRefused))
	}
	l.mu.Lock()
	delete(l.locks, token)
	l.mu.Unlock()
	broken := connErrors.Load()
	err := lk.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) && connErrors.Load() != broken {
		// go-redis retries a command whose connection broke (MaxRetries
		// 3), and a retried release finds the key its first try deleted.
		// drop-release-reply showed it: the reply of a release that ran was
		// lost, redislock answered ErrLockNotHeld, and read as a definite
		// "no effect" the history kept the holder's lease alive to its TTL
		// and flagged the next grant as a double grant of a correct server.
		// "Not held" after a connection broke during the release is
		// therefore unknown, as valkeylock's zero from a retried script is;
		// with every connection whole it is the server's answer.
		return Result{history.Info, fmt.Errorf("redislock Release: %w (go-redis may have retried it: an earlier try, its reply lost, may have released the lock)", err)}
	}
	return goRedisResult("redislock Release", err)
}

// goRedisResult classifies go-redis's and the library's errors as Classify
// does valkey-go's: the library's verdicts and the server's error replies
// are definite refusals; a pool timeout, a closed client and a failed dial
// sent nothing; anything else (a read timeout, a reset) may have run.
func goRedisResult(op string, err error) Result {
	if err == nil {
		return ok()
	}
	werr := fmt.Errorf("%s: %w", op, err)
	var re redis.Error
	var dial *net.OpError
	switch {
	case errors.Is(err, redislock.ErrNotObtained), errors.Is(err, redislock.ErrLockNotHeld),
		errors.Is(err, redis.Nil), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return fail(werr)
	case errors.As(err, &dial) && dial.Op == "dial":
		return fail(werr)
	case errors.As(err, &re): // a reply: go-redis marks only replies so
		return fail(werr)
	}
	return Result{history.Info, werr}
}
