package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
)

// basic is the shape shared by native, lua and unsafe: the same SET NX PX
// acquire (optionally fenced, optionally followed by WAIT/WAITAOF), with the
// recipe's own extend and release.
type basic struct {
	name    string
	cfg     Config
	c       valkey.Client
	extend  func(ctx context.Context, c valkey.Client, key, token string, ttl time.Duration) Result
	release func(ctx context.Context, c valkey.Client, key, token string) Result
	safe    bool

	nodesMu sync.Mutex
	nodes   map[string]valkey.Client // cluster nodes a waited acquire was redirected to
}

func openBasic(cfg Config, b *basic) (Lock, error) {
	c, err := Connect(cfg)
	if err != nil {
		return nil, err
	}
	b.name, b.cfg, b.c = cfg.Recipe, cfg, c
	return b, nil
}

func (b *basic) Recipe() string                      { return b.name }
func (b *basic) SelfRenewing() bool                  { return false }
func (b *basic) Lost(string, string) <-chan struct{} { return nil }
func (b *basic) SafeRelease() bool                   { return b.safe }
func (b *basic) Observe(Observer)                    {}
func (b *basic) Close() {
	b.c.Close()
	b.nodesMu.Lock()
	defer b.nodesMu.Unlock()
	for _, c := range b.nodes {
		c.Close()
	}
}

func (b *basic) Extend(ctx context.Context, key, token string, ttl time.Duration) Result {
	return b.extend(ctx, b.c, key, token, ttl)
}

func (b *basic) Release(ctx context.Context, key, token string) Result {
	return b.release(ctx, b.c, key, token)
}

// FenceKey is the fencing counter beside a lock key: lock:{name} → fence:{name},
// the same hash tag, so MULTI can touch both in cluster mode too.
func FenceKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i:], '}'); j > 1 {
			return "fence:" + key[i:i+j+1]
		}
	}
	return "fence:{" + key + "}"
}

// releaseTimeout bounds the release that undoes an under-replicated acquire,
// which runs even when the acquire's own context has run out.
const releaseTimeout = 2 * time.Second

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func (b *basic) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	if ttl < time.Millisecond {
		return 0, fail(fmt.Errorf("ttl %v below 1ms: %w", ttl, ErrRefused))
	}
	if !b.cfg.Wait.On() && !b.cfg.WaitAOF.On() {
		return b.setNX(ctx, b.c, key, token, ttl)
	}
	// WAIT counts the replicas that acknowledged this connection's writes, so
	// the SET and the WAIT must share one connection. On Valkey Cluster that
	// connection is pinned to the node the client's slot map names, and
	// valkey-go's dedicated cluster client (v1.0.79 cluster.go,
	// dedicatedClusterClient.Do and DoMulti) acts only on TRYAGAIN and
	// CLUSTERDOWN: a MOVED or an ASK comes back as the reply. Measured before
	// this loop: every fenced acquire refused across a legacy slot move
	// (~1,100 a move) and for ~1 s after an atomic one, until the slot map's
	// refresh. A redirect means the node ran nothing, so the acquire is sent
	// again, as a cluster client would, on a connection to the node named
	// (ASKING first for an ASK), at most maxRedirects times.
	c, asking := b.c, false
	for range maxRedirects {
		fence, r, to, ask := b.acquireWaited(ctx, c, asking, key, token, ttl)
		if to == "" || b.cfg.Service.Protocol != endpoint.Cluster {
			return fence, r
		}
		nc, err := b.node(to)
		if err != nil {
			return 0, fail(fmt.Errorf("%v; follow the redirect: %w", r.Err, err))
		}
		c, asking = nc, ask
	}
	return 0, fail(fmt.Errorf("more than %d MOVED/ASK redirects: %w", maxRedirects, ErrRefused))
}

// maxRedirects bounds the redirects one waited acquire follows: a legacy
// move's ASK, then a MOVED once the slot closes, then one to spare.
const maxRedirects = 3

// acquireWaited is the acquire and its WAIT/WAITAOF on one connection of c.
// to is the node a MOVED or ASK reply named (ask: it was an ASK) when the
// acquire was redirected, which ran nothing.
func (b *basic) acquireWaited(ctx context.Context, c valkey.Client, asking bool, key, token string, ttl time.Duration) (fence int64, r Result, to string, ask bool) {
	err := c.Dedicated(func(dc valkey.DedicatedClient) error {
		if asking {
			if err := dc.Do(ctx, dc.B().Asking().Build()).Error(); err != nil {
				r = result(fmt.Errorf("ASKING: %w", err))
				return nil
			}
		}
		fence, r = b.setNX(ctx, dc, key, token, ttl)
		if !r.Ok() {
			to, ask = redirected(r.Err)
			return nil
		}
		short, werr := b.waitAcks(ctx, dc)
		if werr == nil && short == "" {
			return nil
		}
		// Not replicated as asked: give the lock back so the acquire is a fail.
		// If the release's own outcome is unknown, so is the acquire's.
		why := short
		if werr != nil {
			why = werr.Error()
		}
		fence = 0
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		rel := b.release(rctx, b.c, key, token)
		cancel()
		switch {
		case werr != nil && Classify(werr) == history.Info:
			r = Result{history.Info, fmt.Errorf("%s; lock released: %s", why, rel.Outcome)}
		case rel.Outcome == history.Info:
			r = Result{history.Info, fmt.Errorf("%s; release unknown: %v", why, rel.Err)}
		default:
			r = fail(fmt.Errorf("%s; lock released", why))
		}
		return nil
	})
	if err != nil {
		return 0, result(fmt.Errorf("dedicated connection: %w", err)), "", false
	}
	return fence, r, to, ask
}

// redirected is the node a MOVED or ASK error reply in err's chain names.
func redirected(err error) (to string, ask bool) {
	var ve *valkey.ValkeyError
	if !errors.As(err, &ve) {
		return "", false
	}
	if addr, ok := ve.IsMoved(); ok {
		return addr, false
	}
	if addr, ok := ve.IsAsk(); ok {
		return addr, true
	}
	return "", false
}

// node is a client of one cluster node, for a redirected waited acquire;
// opened once per address and closed with the recipe.
func (b *basic) node(addr string) (valkey.Client, error) {
	b.nodesMu.Lock()
	defer b.nodesMu.Unlock()
	if c, ok := b.nodes[addr]; ok {
		return c, nil
	}
	cfg := b.cfg
	cfg.Service = b.cfg.Service.Node(addr)
	c, err := Connect(cfg)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", addr, err)
	}
	if b.nodes == nil {
		b.nodes = map[string]valkey.Client{}
	}
	b.nodes[addr] = c
	return c, nil
}

// setNX sends SET NX PX, or the fenced MULTI block.
func (b *basic) setNX(ctx context.Context, c valkey.CoreClient, key, token string, ttl time.Duration) (int64, Result) {
	set := c.B().Set().Key(key).Value(token).Nx().PxMilliseconds(ttl.Milliseconds()).Build()
	if !b.cfg.Fencing {
		r := nilOK("SET NX PX", c.Do(ctx, set).Error(), "another client holds the lock")
		if r.Ok() {
			step(ctx, "after-set")
		}
		return 0, r
	}
	res := c.DoMulti(ctx,
		c.B().Multi().Build(),
		set,
		c.B().Incr().Key(FenceKey(key)).Build(),
		c.B().Exec().Build())
	for i, r := range res[:3] {
		if err := r.Error(); err != nil {
			return 0, result(fmt.Errorf("MULTI fenced acquire, command %d: %w", i+1, err))
		}
	}
	replies, err := res[3].ToArray()
	if err != nil {
		return 0, result(fmt.Errorf("EXEC: %w", err))
	}
	if len(replies) != 2 {
		return 0, Result{history.Info, fmt.Errorf("EXEC returned %d replies, want 2", len(replies))}
	}
	fence, ferr := replies[1].AsInt64()
	if serr := replies[0].Error(); serr != nil {
		// The counter moved anyway; the number is not ours to use.
		return 0, nilOK(fmt.Sprintf("SET NX PX in MULTI (fence %d not handed out)", fence), serr, "another client holds the lock")
	}
	if ferr != nil {
		return 0, Result{history.Info, fmt.Errorf("INCR in MULTI: %w", ferr)}
	}
	step(ctx, "after-set")
	return fence, ok()
}

// waitAcks runs WAIT and/or WAITAOF; short describes a shortfall ("" if none).
func (b *basic) waitAcks(ctx context.Context, dc valkey.DedicatedClient) (short string, err error) {
	if w := b.cfg.Wait; w.On() {
		n, err := dc.Do(ctx, dc.B().Wait().Numreplicas(int64(w.Replicas)).Timeout(w.TimeoutMs).Build()).AsInt64()
		if err != nil {
			return "", fmt.Errorf("WAIT %d %d: %w", w.Replicas, w.TimeoutMs, err)
		}
		if n < int64(w.Replicas) {
			return fmt.Sprintf("WAIT %d %d: %d replica(s) acknowledged", w.Replicas, w.TimeoutMs, n), nil
		}
	}
	if w := b.cfg.WaitAOF; w.On() {
		v, err := dc.Do(ctx, dc.B().Waitaof().Numlocal(int64(w.Local)).Numreplicas(int64(w.Replicas)).Timeout(w.TimeoutMs).Build()).AsIntSlice()
		if err != nil {
			return "", fmt.Errorf("WAITAOF %d %d %d: %w", w.Local, w.Replicas, w.TimeoutMs, err)
		}
		if len(v) != 2 {
			return "", fmt.Errorf("WAITAOF: %d replies, want 2: %w", len(v), errors.New("protocol"))
		}
		if v[0] < int64(w.Local) || v[1] < int64(w.Replicas) {
			return fmt.Sprintf("WAITAOF %d %d %d: fsynced locally %d, by %d replica(s)", w.Local, w.Replicas, w.TimeoutMs, v[0], v[1]), nil
		}
	}
	return "", nil
}

// intReply turns a 1/0 integer reply into ok/fail; what0 says what a 0 means.
// ErrNotHeld marks the server's answer that the caller's token does not hold
// the lock (a nil or 0 reply). Only this answer means "stop working": a
// transport error leaves the lease running until its own deadline.
var ErrNotHeld = errors.New("not held")

// NotHeld reports whether r is the server saying the lock is not the caller's.
func NotHeld(r Result) bool { return errors.Is(r.Err, ErrNotHeld) }

func intReply(cmd string, v int64, err error, what0 string) Result {
	if err != nil {
		return result(fmt.Errorf("%s: %w", cmd, err))
	}
	if v == 0 {
		return fail(fmt.Errorf("%s returned 0: %s (%w)", cmd, what0, ErrNotHeld))
	}
	return ok()
}

// nilOK turns an OK / nil reply into ok/fail.
func nilOK(cmd string, err error, whatNil string) Result {
	if err == nil {
		return ok()
	}
	if errors.Is(err, valkey.Nil) {
		return fail(fmt.Errorf("%s returned nil: %s (%w)", cmd, whatNil, ErrNotHeld))
	}
	return result(fmt.Errorf("%s: %w", cmd, err))
}
