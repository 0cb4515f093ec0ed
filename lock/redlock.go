package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
)

// Redlock is the recipe's name.
const Redlock = "redlock"

// redlockRecipe is its catalog entry: it speaks to Redlock's independent
// primaries alone (one primary's lock is the native recipe).
var redlockRecipe = Recipe{Name: Redlock, Summary: "the distlock page's Redlock, own code: SET NX PX on N primaries in turn, majority, validity = TTL - elapsed - drift",
	Lacks: needsNative, open: openRedlock, Speaks: []endpoint.Protocol{endpoint.Redlock}, Partitions: true, Replies: true}

func init() { registerRecipes(redlockRecipe) }

// DefaultDriftFactor is the distlock page's clock drift factor; the fixed
// 2 ms it adds is driftFixed.
const (
	DefaultDriftFactor = 0.01
	driftFixed         = 2 * time.Millisecond
)

// redlock follows the five steps of the Redis/Valkey "Distributed Locks"
// page, as our own code: (1) read the time t1; (2) SET key token NX PX ttl on
// each of the N nodes in turn, each with a timeout small beside the TTL so a
// dead node costs little; (3) the lock is held when a majority N/2+1 said OK
// and the validity TTL − (t2 − t1) − drift is positive; (4) that validity is
// the lease the client may use; (5) otherwise, and on release, unlock every
// node. Extend is the same round with SET … IFEQ token PX ttl. There is no
// fencing counter: Redlock has no single place to keep one.
type redlock struct {
	name    string
	cfg     Config
	addrs   []string
	nodes   []valkey.Client
	quorum  int
	factor  float64
	perNode time.Duration

	mu          sync.Mutex
	unreachable map[string]bool          // addresses this client cannot reach (the nemesis's partial partition)
	validity    map[string]time.Duration // last ok acquire/extend's validity, by token
}

func openRedlock(cfg Config) (Lock, error) {
	if cfg.Service.Protocol != endpoint.Redlock || len(cfg.Service.Addrs) == 0 {
		return nil, fmt.Errorf("recipe %s needs the redlock topology's node list (--topology redlock)", cfg.Recipe)
	}
	l := &redlock{name: cfg.Recipe, cfg: cfg, addrs: cfg.Service.Addrs, quorum: len(cfg.Service.Addrs)/2 + 1,
		factor: cfg.DriftFactor, unreachable: map[string]bool{}, validity: map[string]time.Duration{}}
	if l.factor == 0 {
		l.factor = DefaultDriftFactor
	}
	// The distlock page: "if the auto-release time is 10 seconds, the timeout
	// could be in the ~ 5-50 milliseconds range". 50 ms is the floor here, as
	// a loaded 2-core machine misses 5 ms often.
	l.perNode = max(50*time.Millisecond, cfg.TTL/100)
	for _, a := range cfg.Service.Addrs {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{a}, ForceSingleClient: true,
			DisableRetry: true, DisableCache: true, DialCtxFn: hookedDial})
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("connect to %s: %w", a, err)
		}
		l.nodes = append(l.nodes, c)
	}
	return l, nil
}

func (l *redlock) Recipe() string                      { return l.name }
func (l *redlock) SelfRenewing() bool                  { return false }
func (l *redlock) Lost(string, string) <-chan struct{} { return nil }
func (l *redlock) SafeRelease() bool                   { return true }
func (l *redlock) Observe(Observer)                    {}
func (l *redlock) Close() {
	for _, c := range l.nodes {
		c.Close()
	}
}

// SetUnreachable implements Reachability: the nodes at these addresses get
// no bytes from this client until the next call (nil heals).
func (l *redlock) SetUnreachable(addrs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unreachable = map[string]bool{}
	for _, a := range addrs {
		l.unreachable[a] = true
	}
}

// Validity implements ValidityReporter.
func (l *redlock) Validity(token string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validity[token]
}

func (l *redlock) reachable(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.unreachable[l.addrs[i]]
}

// round sends one command per node, in turn, each with the per-node timeout,
// and counts the answers: OK, a definite refusal (nil or 0 reply, or an
// error reply), unknown (timeout, lost connection), or unreachable (nothing
// was sent).
func (l *redlock) round(ctx context.Context, build func(c valkey.Client) valkey.Completed, okReply func(valkey.ValkeyResult) (bool, error)) history.QuorumTally {
	t := history.QuorumTally{Nodes: len(l.nodes), Quorum: l.quorum}
	for i, c := range l.nodes {
		if !l.reachable(i) {
			t.Unreachable++
			continue
		}
		nctx, cancel := context.WithTimeout(ctx, l.perNode)
		good, err := okReply(c.Do(nctx, build(c)))
		cancel()
		switch {
		case err == nil && good:
			t.OK++
		case err == nil, errors.Is(err, valkey.Nil), Classify(err) == history.Fail:
			t.Refused++
		default:
			t.Unknown++
		}
	}
	return t
}

func setOK(r valkey.ValkeyResult) (bool, error) { return r.Error() == nil, r.Error() }

func intOK(r valkey.ValkeyResult) (bool, error) {
	v, err := r.AsInt64()
	return v == 1, err
}

func (l *redlock) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*l.factor) + driftFixed
}

func (l *redlock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	t1 := time.Now()
	t := l.round(ctx, func(c valkey.Client) valkey.Completed {
		return c.B().Set().Key(key).Value(token).Nx().PxMilliseconds(ttl.Milliseconds()).Build()
	}, setOK)
	validity := ttl - time.Since(t1) - l.drift(ttl)
	if t.OK >= l.quorum && validity > 0 {
		l.setValidity(token, validity)
		return 0, ok()
	}
	// Step 5: no lock; unlock every node, also those that seemed to refuse.
	why := fmt.Sprintf("%s, validity %v", t, validity.Round(time.Millisecond))
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	rel := l.Release(rctx, key, token)
	cancel()
	if t.OK+t.Unknown >= l.quorum {
		// A majority may hold our token: the outcome is not known.
		return 0, Result{history.Info, fmt.Errorf("%s; released: %s", why, rel.Outcome)}
	}
	// The nodes that refused are a majority, so no majority ever held our
	// token, whatever the clean-up's answer: the acquire failed. (Counted
	// unknown when the clean-up was unconfirmed, such acquires kept
	// porcupine searching past its 10 s on redlock-restart
	// --delayed-restart, 5 runs of 5.)
	return 0, fail(fmt.Errorf("%s; released: %s (%w)", why, rel.Outcome, ErrRefused))
}

func (l *redlock) Extend(ctx context.Context, key, token string, ttl time.Duration) Result {
	t1 := time.Now()
	t := l.round(ctx, func(c valkey.Client) valkey.Completed {
		return c.B().Arbitrary("SET").Keys(key).Args(token, "IFEQ", token, "PX", ms(ttl)).Build()
	}, setOK)
	validity := ttl - time.Since(t1) - l.drift(ttl)
	if t.OK >= l.quorum && validity > 0 {
		l.setValidity(token, validity)
		return ok()
	}
	why := "redlock extend: " + t.Answers()
	if t.OK+t.Unknown >= l.quorum {
		return Result{history.Info, errors.New(why)}
	}
	return fail(fmt.Errorf("%s: no majority holds the token (%w)", why, ErrNotHeld))
}

func (l *redlock) Release(ctx context.Context, key, token string) Result {
	t := l.round(ctx, func(c valkey.Client) valkey.Completed {
		return c.B().Arbitrary("DELIFEQ").Keys(key).Args(token).Build()
	}, intOK)
	l.mu.Lock()
	delete(l.validity, token)
	l.mu.Unlock()
	why := "redlock release: " + t.Answers()
	switch {
	case t.OK >= l.quorum:
		return ok()
	case t.OK > 0 || t.Unknown > 0:
		// Deleted on some nodes (or maybe): the token no longer holds a
		// majority, so the release took effect in part, and a fail would
		// claim it had none. The checker then stops counting the lease as
		// certainly held from here (a fail kept it alive and made a later
		// grant look like a double grant: redlock-restart --delayed-restart,
		// 2 runs in about 8).
		return Result{history.Info, errors.New(why)}
	}
	return fail(fmt.Errorf("%s: no node held the token (%w)", why, ErrNotHeld))
}

func (l *redlock) setValidity(token string, v time.Duration) {
	l.mu.Lock()
	l.validity[token] = v
	l.mu.Unlock()
}

// Reachability is a recipe that talks to several nodes and can be told that
// some of them are unreachable from this client: the nemesis's partial
// partition on loopback, where messages to those nodes are never sent (a
// SIGSTOPped node would still execute what sat in its socket once resumed).
type Reachability interface {
	SetUnreachable(addrs []string)
}

// RetryJitterer is a recipe whose algorithm asks a client that failed to
// take the lock to wait a random delay before it tries again: Redlock's
// ("try again after a random delay in order to try to desynchronize multiple
// clients trying to acquire the lock for the same resource at the same
// time", the distlock page). The workload adds a delay drawn from
// [0, RetryJitter) to its pause after a failed or unknown acquire.
type RetryJitterer interface {
	RetryJitter() time.Duration
}

// redlockRetryJitter spreads the retries of clients that failed together.
// Without it they fail in step: in redlock-clock-jump seed 1 (1 run of 10
// back to back, with the fix for the clock window in), the four clients of
// the side that needed the jumped node's copy retried every 57 ms within
// 3 ms of each other for a whole second, each taking 1 or 2 of the 3 nodes,
// none a majority, until the holder's next extend found the copy gone and
// the lesson did not happen. 50 ms is larger than that spread and than an
// acquire's round trips here, and small beside the renew period.
const redlockRetryJitter = 50 * time.Millisecond

// RetryJitter implements RetryJitterer.
func (l *redlock) RetryJitter() time.Duration { return redlockRetryJitter }

// ValidityReporter is a recipe whose lease is shorter than the TTL it asks
// for: Redlock's validity, TTL − elapsed − drift, of the token's last ok
// acquire or extend, or valkeylock's TTL − elapsed (its deadlines are
// absolute, fixed before it sends). The client records it (validity_ms) and
// works within it.
type ValidityReporter interface {
	Validity(token string) time.Duration
}

// stepKey carries a callback through an acquire's context.
type stepKey struct{}

// WithStep returns a context whose acquire calls fn between its commands,
// naming the point ("after-setnx", "after-set"): the client's crash fault
// SIGKILLs itself there.
func WithStep(ctx context.Context, fn func(point string)) context.Context {
	return context.WithValue(ctx, stepKey{}, fn)
}

func step(ctx context.Context, point string) {
	if fn, ok := ctx.Value(stepKey{}).(func(string)); ok && fn != nil {
		fn(point)
	}
}
