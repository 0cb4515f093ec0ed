package workload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/resource"
)

// Serve is the whole client process: it reads the ClientConfig from the first
// line of in, then runs cycles until a stop control, EOF on in, or ctx ends.
// Events go to out. It returns when the current cycle has released its lock.
func Serve(ctx context.Context, in io.Reader, out io.Writer, logw io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return fmt.Errorf("client: no config line on stdin: %v", sc.Err())
	}
	var cfg ClientConfig
	dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("client: config line: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	c, err := newClient(cfg, out, logw)
	if err != nil {
		return err
	}
	defer c.close()
	stopped := make(chan struct{})
	var once sync.Once
	go readControls(sc, c.clock, func() { once.Do(func() { close(stopped) }) }, c.logf, c.applyExtra)
	// An exec program that breaks the protocol or exits stops the client at
	// once (operations in flight end info) and the process exits 2 naming it.
	if b, breakable := c.lk.(lock.Breakable); breakable {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-b.Broken():
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := c.run(ctx, stopped); err != nil {
			return err
		}
		if err := b.Err(); err != nil {
			return err // the runner names the client
		}
		return nil
	}
	return c.run(ctx, stopped)
}

type client struct {
	cfg   ClientConfig
	lk    lock.Lock
	res   Section
	clock *Clock
	em    *emitter
	rng   *rand.Rand
	logw  io.Writer

	obsMu   sync.Mutex
	obsPids map[string]history.Process // valkeylock's own extends in flight, by token

	// starvedUntil is when a starve_renewals control's stall ends (unix
	// ns of the true clock), 0 for none.
	starvedUntil atomic.Int64

	replyMu    sync.Mutex
	replyArmed ReplyControl // a reply fault waiting for its operation
}

// openPatience is how long a client tries to open its recipe while the
// network answers with a reset, a refusal or silence.
const openPatience = 10 * time.Second

// openRetrying opens the recipe, again after a transient network error,
// until patience runs out: a client starts while the runner's proxies and
// the machine are busy, and the runner has already checked the server. A
// soak run on a machine loaded to 15 lost a client to one "connection reset
// by peer" at its first connection; the client exited, and the run stopped
// with exit 254 as if a program had broken the protocol. Other errors are
// returned at once.
func openRetrying(cfg lock.Config, logw io.Writer, patience time.Duration) (lock.Lock, error) {
	deadline := time.Now().Add(patience)
	wait := 50 * time.Millisecond
	for {
		lk, err := lock.Open(cfg)
		if err == nil || !transientNetErr(err) || time.Now().Add(wait).After(deadline) {
			return lk, err
		}
		fmt.Fprintf(logw, "client: %v; trying again in %v\n", err, wait)
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// transientNetErr: the network, not the configuration, refused this time.
func transientNetErr(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || os.IsTimeout(err)
}

func newClient(cfg ClientConfig, out, logw io.Writer) (*client, error) {
	if logw == nil {
		logw = os.Stderr
	}
	lk, err := openRetrying(cfg.Lock, logw, openPatience)
	if err != nil {
		return nil, fmt.Errorf("client %d: %w", cfg.Slot, err)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = int64(cfg.Slot) + 1
	}
	c := &client{cfg: cfg, lk: lk, clock: NewClock(), em: newEmitter(out, cfg.Slot, cfg.NumClients),
		rng: rand.New(rand.NewSource(seed + int64(cfg.Slot)*7919)), logw: logw, obsPids: map[string]history.Process{}}
	if cfg.ClockOffsetMs != 0 || cfg.ClockRate != 0 {
		c.clock.Set(time.Duration(cfg.ClockOffsetMs*float64(time.Millisecond)), cfg.ClockRate)
	}
	if cfg.ResourceAddr != "" {
		c.res = resource.NewClient(cfg.ResourceAddr)
	}
	lk.Observe(c.observe)
	return c, nil
}

func (c *client) close() {
	c.lk.Close()
	if rc, isClient := c.res.(*resource.Client); isClient {
		rc.Close()
	}
}

func (c *client) logf(format string, a ...any) {
	fmt.Fprintf(c.logw, "client %d: "+format+"\n", append([]any{c.cfg.Slot}, a...)...)
}

func (c *client) run(ctx context.Context, stopped <-chan struct{}) error {
	defer c.em.flush()
	for n := 0; c.cfg.MaxCycles == 0 || n < c.cfg.MaxCycles; n++ {
		select {
		case <-stopped:
			return nil
		case <-ctx.Done():
			return nil
		default:
		}
		granted := c.cycle(ctx)
		if err := c.em.failed(); err != nil {
			return err // stdout is gone: the runner is not listening
		}
		p := ms(c.cfg.PauseMs)
		if j, ok := c.lk.(lock.RetryJitterer); ok && !granted && j.RetryJitter() > 0 {
			p += time.Duration(c.rng.Int63n(int64(j.RetryJitter())))
		}
		if p > 0 {
			c.em.flush()
			t := time.NewTimer(p)
			select {
			case <-t.C:
			case <-stopped:
				t.Stop()
				return nil
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
	}
	return nil
}

func (c *client) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.OpTimeout())
}

// cycle is one acquire → hold (renew, section) → release; it reports
// whether the lock was granted.
func (c *client) cycle(ctx context.Context) bool {
	key := c.cfg.Keys[c.rng.Intn(len(c.cfg.Keys))]
	tok := lock.NewToken()
	ttl := c.cfg.TTL()
	ev := history.Event{F: history.FAcquire, Key: key, Token: tok, TTLMs: ttl.Milliseconds(), Expiry: lock.Expiry(c.cfg.Lock)}
	p := c.em.invoke(ev)
	// The lease is counted from before the request left: the server's TTL
	// starts later, so this end is never later than the server's.
	granted := c.clock.Now()
	octx, cancel := c.opCtx(ctx)
	disarm := c.armReply(history.FAcquire, cancel)
	fence, r := c.lk.Acquire(lock.WithStep(octx, c.stepHook), key, tok, ttl)
	cancel()
	ev.Reply = disarm()
	ev.Fence, ev.Error = fence, r.Error()
	if fence != 0 {
		ev.FenceSource = lock.FenceSource(c.cfg.Lock)
	}
	validity := c.validity(tok, r)
	ev.ValidityMs = validity.Milliseconds()
	// Every path from here invokes next (the fence, a section's read, the
	// release) or returns to run, which flushes before it waits.
	c.em.completeLater(p, r.Outcome, ev)
	switch r.Outcome {
	case history.Fail:
		return false
	case history.Info:
		// The lock may be ours; a token-checked release frees it early and can
		// harm nobody. A bare DEL could, so unsafe waits for the TTL instead.
		if c.lk.SafeRelease() {
			c.release(ctx, key, tok)
		}
		return false
	}
	end := granted + int64(ttl)
	if validity != 0 {
		// Redlock: the usable lease is the validity, counted from now; a
		// lock handed over expired (below 0) is not worked under.
		end = min(end, c.clock.Now()+int64(validity))
	}
	if validity < 0 {
		c.release(ctx, key, tok)
		return true
	}
	if c.cfg.FenceSource == history.FenceResource {
		f, ok := c.resourceFence(ctx, key, tok, end)
		if !ok {
			c.release(ctx, key, tok)
			return true
		}
		fence = f
	}
	h := newHold(key, tok, fence, end)
	var wg sync.WaitGroup
	hctx, endHold := context.WithCancel(ctx)
	if c.lk.SelfRenewing() {
		lost := c.lk.Lost(key, tok)
		go func() {
			select {
			case <-lost:
				h.lose()
			case <-hctx.Done():
			}
		}()
	} else {
		wg.Add(2)
		go func() { defer wg.Done(); c.renew(ctx, hctx, h, granted) }()
		go func() { defer wg.Done(); c.watchExpiry(hctx, h) }()
	}
	if !c.cfg.NoSection {
		for step := 0; step < c.cfg.StepsOrOne() && !h.isLost(); step++ {
			c.section(ctx, h)
		}
	}
	endHold()
	wg.Wait() // no extend in flight when the release goes out
	c.release(ctx, key, tok)
	return true
}

// resourceFence asks the resource's database for a fence number right after
// a grant, as its own operation (f fence): the number is not part of the lock
// service's reply. Without a number the holder does not work, and releases.
// A number that arrives after the lease's end by the client's clock is not
// used either: issued that late, it could be newer than the next holder's.
func (c *client) resourceFence(ctx context.Context, key, tok string, leaseEnd int64) (int64, bool) {
	fr, isFencer := c.res.(resource.Fencer)
	if !isFencer {
		c.logf("fence_source resource, but the section cannot issue numbers")
		return 0, false
	}
	ev := history.Event{F: history.FFence, Key: key, Token: tok}
	p := c.em.invoke(ev)
	octx, cancel := c.opCtx(ctx)
	rep, err := fr.Fence(octx, resource.Holder{RunID: RunID(key), Client: c.cfg.Slot, Process: int(p), Token: tok})
	cancel()
	t := history.OK
	switch {
	case err != nil && resource.Unknown(err):
		t, ev.Error = history.Info, err.Error()
	case err != nil:
		t, ev.Error = history.Fail, err.Error()
	default:
		ev.Fence, ev.FenceSource = rep.Fence, history.FenceResource
	}
	c.em.complete(p, t, ev)
	if t != history.OK {
		return 0, false
	}
	if c.clock.Now() >= leaseEnd {
		c.logf("fence %d arrived after the lease's end; not used", rep.Fence)
		return 0, false
	}
	return rep.Fence, true
}

func (c *client) release(ctx context.Context, key, tok string) {
	ev := history.Event{F: history.FRelease, Key: key, Token: tok}
	p := c.em.invoke(ev)
	octx, cancel := c.opCtx(ctx)
	disarm := c.armReply(history.FRelease, cancel)
	r := c.lk.Release(octx, key, tok)
	cancel()
	ev.Reply = disarm()
	ev.Error = r.Error()
	c.em.completeLater(p, r.Outcome, ev) // every caller returns to run
}

// renew extends the lease every Renew after the last grant, by the decision
// clock, until the hold ends or the server answers that the token does not
// hold the lock. A transport error (the primary died, the reply was lost)
// proves nothing: the lease runs on until its own deadline, which watchExpiry
// enforces, and the renew is retried at the usual interval. That is how a real lock client
// behaves, and it is why a failover can leave the old holder working while a
// new one is granted the lock.
func (c *client) renew(ctx, hctx context.Context, h *hold, granted int64) {
	ttl := c.cfg.TTL()
	next := granted + int64(c.cfg.Renew())
	for {
		if c.clock.SleepUntil(hctx, next) != nil || c.starved(hctx) != nil {
			return
		}
		// By its own clock the lease is over (a clock jump, a long pause):
		// it is lost, not renewed. watchExpiry may not have woken yet.
		if c.clock.Now() >= h.end() {
			h.lose()
			return
		}
		ev := history.Event{F: history.FExtend, Key: h.key, Token: h.token, TTLMs: ttl.Milliseconds(), Expiry: lock.Expiry(c.cfg.Lock)}
		p := c.em.invokeOn(laneRenew, ev)
		start := c.clock.Now()
		// Not hctx: an extend already sent is finished and recorded even if
		// the section ends meanwhile.
		octx, cancel := c.opCtx(ctx)
		r := c.lk.Extend(octx, h.key, h.token, ttl)
		cancel()
		ev.Error = r.Error()
		validity := c.validity(h.token, r)
		ev.ValidityMs = validity.Milliseconds()
		c.em.complete(p, r.Outcome, ev)
		switch {
		case r.Ok() && validity > 0:
			h.extendTo(min(start+int64(ttl), c.clock.Now()+int64(validity)))
			next = start + int64(c.cfg.Renew())
		case r.Ok():
			h.extendTo(start + int64(ttl))
			next = start + int64(c.cfg.Renew())
		case lock.NotHeld(r):
			h.lose()
			return
		default:
			// Retry at the usual pace, as lock libraries' watchdogs do.
			next = c.clock.Now() + int64(c.cfg.Renew())
		}
	}
}

// watchExpiry ends the hold when the decision clock passes the lease's end:
// a renewal stuck in flight must not let the section run past it.
func (c *client) watchExpiry(hctx context.Context, h *hold) {
	for {
		end := h.end()
		if c.clock.SleepUntil(hctx, end) != nil || c.starved(hctx) != nil {
			return
		}
		if h.end() <= c.clock.Now() {
			h.lose()
			return
		}
	}
}

// validity is a Redlock recipe's lease after an ok acquire or extend; 0
// for the others (their lease is the TTL).
func (c *client) validity(token string, r lock.Result) time.Duration {
	if v, ok := c.lk.(lock.ValidityReporter); ok && r.Ok() {
		return v.Validity(token)
	}
	return 0
}

// observe records a self-renewing library's own extends.
func (c *client) observe(f, key, token string, t history.Type, ttl time.Duration, err error) {
	ev := history.Event{F: f, Key: key, Token: token, TTLMs: ttl.Milliseconds()}
	c.obsMu.Lock()
	defer c.obsMu.Unlock()
	if t == history.Invoke {
		c.obsPids[token] = c.em.invokeOn(laneRenew, ev)
		return
	}
	p, found := c.obsPids[token]
	if !found {
		return
	}
	delete(c.obsPids, token)
	if err != nil {
		ev.Error = err.Error()
	}
	if v, ok := c.lk.(lock.ValidityReporter); ok && t == history.OK {
		ev.ValidityMs = v.Validity(token).Milliseconds()
	}
	c.em.complete(p, t, ev)
}
