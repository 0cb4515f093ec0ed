package lock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
)

// ConformanceReport is what ClientTest found.
type ConformanceReport struct {
	Passed, Failed int
	Fences         bool  // the program returned fence numbers
	Protocol       error // a protocol error or exit stopped the suite
}

// ClientTest drives an exec:PATH program through the protocol conformance
// suite (docs/protocol.md) against the server cfg names, before any fault:
// acquire, refusal, extend (longer and shorter), foreign tokens, release,
// expiry, concurrent requests, fences. It checks the outcomes it is told and
// what the server holds (the key's value and PTTL, read behind the program's
// back). Each case prints one PASS or FAIL line to out.
func ClientTest(ctx context.Context, cfg Config, out io.Writer) (ConformanceReport, error) {
	var rep ConformanceReport
	if ExecProgram(cfg.Recipe) == "" {
		return rep, fmt.Errorf("client-test: %q is not exec:PATH", cfg.Recipe)
	}
	raw, err := Connect(cfg)
	if err != nil {
		return rep, err
	}
	defer raw.Close()
	lk, err := openExec(cfg)
	if err != nil {
		return rep, err
	}
	l := lk.(*execLock)
	defer l.Close()
	t := &suite{ctx: ctx, l: l, raw: raw, out: out, opTimeout: cfg.OpTimeout, rep: &rep}
	if t.opTimeout <= 0 {
		t.opTimeout = 2 * time.Second
	}
	t.run()
	rep.Protocol = l.Err()
	return rep, nil
}

type suite struct {
	ctx       context.Context
	l         *execLock
	raw       valkey.Client
	out       io.Writer
	opTimeout time.Duration
	rep       *ConformanceReport
	silent    atomic.Bool // the program stopped answering: the rest is skipped
	n         int
}

// caseErr is a failed expectation inside a case.
type caseErr struct{ msg string }

func (t *suite) key() string {
	t.n++
	return fmt.Sprintf("%s{client-test-%d-%s}", KeyPrefix, t.n, NewToken()[:6])
}

// expect runs one operation and fails the case unless it ended want.
func (t *suite) expect(what string, want history.Type, op func(context.Context) Result) Result {
	ctx, cancel := context.WithTimeout(t.ctx, t.opTimeout)
	defer cancel()
	r := op(ctx)
	if r.Outcome == want {
		return r
	}
	if r.Outcome == history.Info && ctx.Err() != nil {
		t.silent.Store(true)
	}
	panic(caseErr{fmt.Sprintf("%s ended %s (%v), want %s", what, r.Outcome, r.Err, want)})
}

func (t *suite) acquire(what, key, tok string, ttl time.Duration, want history.Type) int64 {
	var fence int64
	t.expect(what, want, func(ctx context.Context) Result {
		f, r := t.l.Acquire(ctx, key, tok, ttl)
		fence = f
		return r
	})
	return fence
}

func (t *suite) extend(what, key, tok string, ttl time.Duration, want history.Type) Result {
	return t.expect(what, want, func(ctx context.Context) Result { return t.l.Extend(ctx, key, tok, ttl) })
}

func (t *suite) release(what, key, tok string, want history.Type) Result {
	return t.expect(what, want, func(ctx context.Context) Result { return t.l.Release(ctx, key, tok) })
}

// holds checks that the server has key set to the program's token for tok.
func (t *suite) holds(key, tok string) {
	v, err := t.raw.Do(t.ctx, t.raw.B().Get().Key(key).Build()).ToString()
	want := t.l.progToken(tok)
	switch {
	case valkey.IsValkeyNil(err):
		panic(caseErr{fmt.Sprintf("the server has no %s: the lock is not held", key)})
	case err != nil:
		panic(caseErr{fmt.Sprintf("GET %s: %v", key, err)})
	case v != want:
		panic(caseErr{fmt.Sprintf("%s holds %q, not the grant's token %q (an ok acquire that stored another value must return it as \"token\")", key, v, want)})
	}
}

func (t *suite) absent(key, why string) {
	n, err := t.raw.Do(t.ctx, t.raw.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		panic(caseErr{fmt.Sprintf("EXISTS %s: %v", key, err)})
	}
	if n != 0 {
		panic(caseErr{fmt.Sprintf("%s still exists: %s", key, why)})
	}
}

func (t *suite) pttl(key string) time.Duration {
	v, err := t.raw.Do(t.ctx, t.raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		panic(caseErr{fmt.Sprintf("PTTL %s: %v", key, err)})
	}
	return time.Duration(v) * time.Millisecond
}

func (t *suite) pttlWithin(key string, lo, hi time.Duration, what string) {
	if p := t.pttl(key); p < lo || p > hi {
		panic(caseErr{fmt.Sprintf("%s: PTTL %v, want %v to %v", what, p, lo, hi)})
	}
}

// check runs one case, printing PASS, FAIL or SKIP.
func (t *suite) check(name string, body func() string) {
	if t.silent.Load() {
		fmt.Fprintf(t.out, "  SKIP  %s: the program stopped answering\n", name)
		t.rep.Failed++
		return
	}
	if t.l.Err() != nil {
		fmt.Fprintf(t.out, "  SKIP  %s: the protocol broke\n", name)
		t.rep.Failed++
		return
	}
	note, failed := func() (note, failed string) {
		defer func() {
			if v := recover(); v != nil {
				ce, isCase := v.(caseErr)
				if !isCase {
					panic(v)
				}
				failed = ce.msg
			}
		}()
		return body(), ""
	}()
	if failed != "" {
		fmt.Fprintf(t.out, "  FAIL  %s: %s\n", name, failed)
		t.rep.Failed++
		return
	}
	if note != "" {
		note = ": " + note
	}
	fmt.Fprintf(t.out, "  PASS  %s%s\n", name, note)
	t.rep.Passed++
}

// fresh takes a new key with a new token (TTL ttl) for one case, so that no
// case starts from what an earlier one left: after a foreign-token release
// that wrongly succeeded, the next case would otherwise fail only because
// the key was gone. The key is deleted behind the program's back when the
// case ends.
func (t *suite) fresh(ttl time.Duration) (key, tok string) {
	key, tok = t.key(), NewToken()
	t.acquire("acquire of a fresh key (the case's set-up)", key, tok, ttl, history.OK)
	return key, tok
}

// drop deletes key directly on the server, whatever the case left.
func (t *suite) drop(key string) {
	_ = t.raw.Do(context.WithoutCancel(t.ctx), t.raw.B().Del().Key(key).Build()).Error()
}

func (t *suite) run() {
	var fenceA int64
	t.check("acquire a free key", func() string {
		k, a := t.key(), NewToken()
		defer t.drop(k)
		fenceA = t.acquire("acquire", k, a, 5*time.Second, history.OK)
		t.holds(k, a)
		t.pttlWithin(k, 4*time.Second, 5*time.Second, "TTL 5 s")
		return "the key holds the grant's token with its TTL"
	})
	t.check("refuse a held key", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.acquire("acquire by another token", k, NewToken(), 5*time.Second, history.Fail)
		t.holds(k, a)
		return ""
	})
	t.check("extend with its own token, longer TTL", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.extend("extend to 9 s", k, a, 9*time.Second, history.OK)
		t.pttlWithin(k, 8*time.Second, 9*time.Second, "extend sets the TTL to ttl_ms from now")
		return ""
	})
	t.check("extend with its own token, shorter TTL", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.extend("extend to 3 s", k, a, 3*time.Second, history.OK)
		t.pttlWithin(k, 2*time.Second, 3*time.Second, "extend sets the TTL to ttl_ms from now, also when shorter (not added to what is left)")
		return ""
	})
	// Of the foreign-token extends and releases that failed as they must,
	// how many said "not_held": the summary speaks of those only, not of
	// one that wrongly succeeded (its own case fails and says so).
	foreignFails, notHeld := 0, 0
	t.check("extend with a foreign token", func() string {
		k, a := t.fresh(3 * time.Second)
		defer t.drop(k)
		r := t.extend("extend by another token", k, NewToken(), 9*time.Second, history.Fail)
		foreignFails++
		if NotHeld(r) {
			notHeld++
		}
		t.holds(k, a)
		t.pttlWithin(k, 0, 3*time.Second, "a refused extend must not change the TTL")
		return ""
	})
	t.check("release with a foreign token", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		r := t.release("release by another token", k, NewToken(), history.Fail)
		foreignFails++
		if NotHeld(r) {
			notHeld++
		}
		t.holds(k, a)
		return ""
	})
	t.check("release with its own token", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.release("release", k, a, history.OK)
		t.absent(k, "an ok release must delete the key")
		return ""
	})
	t.check("release and extend after release", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.release("release", k, a, history.OK)
		t.release("second release", k, a, history.Fail)
		t.extend("extend after release", k, a, 5*time.Second, history.Fail)
		t.absent(k, "an extend must not bring a released lock back")
		return ""
	})
	t.check("expiry", func() string {
		k2, c, d := t.key(), NewToken(), NewToken()
		t.acquire("acquire with TTL 300 ms", k2, c, 300*time.Millisecond, history.OK)
		time.Sleep(450 * time.Millisecond)
		t.absent(k2, "the TTL ran out 150 ms ago")
		t.extend("extend of the expired grant", k2, c, 5*time.Second, history.Fail)
		t.absent(k2, "an extend must not bring an expired lock back")
		t.acquire("acquire after expiry", k2, d, 5*time.Second, history.OK)
		t.release("release of the expired grant", k2, c, history.Fail)
		t.holds(k2, d)
		t.release("release", k2, d, history.OK)
		return ""
	})
	t.check("concurrent requests on 8 keys", func() string {
		keys := make([]string, 8)
		for i := range keys {
			keys[i] = t.key()
		}
		var wg sync.WaitGroup
		errs := make([]error, len(keys))
		for i, key := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if v := recover(); v != nil {
						if ce, isCase := v.(caseErr); isCase {
							errs[i] = errors.New(ce.msg)
							return
						}
						panic(v)
					}
				}()
				tok := NewToken()
				t.acquire("acquire "+key, key, tok, 5*time.Second, history.OK)
				t.release("release "+key, key, tok, history.OK)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			panic(caseErr{err.Error()})
		}
		return "answers matched by id"
	})
	t.check("fences", func() string {
		if fenceA <= 0 {
			return "none returned: runs need --fence none with this program"
		}
		k3, e, f := t.key(), NewToken(), NewToken()
		f1 := t.acquire("acquire", k3, e, 5*time.Second, history.OK)
		t.release("release", k3, e, history.OK)
		f2 := t.acquire("acquire again", k3, f, 5*time.Second, history.OK)
		t.release("release", k3, f, history.OK)
		if f1 <= 0 || f2 <= f1 {
			panic(caseErr{fmt.Sprintf("fences %d then %d on one key: want positive and increasing", f1, f2)})
		}
		t.rep.Fences = true
		return fmt.Sprintf("returned and increasing (%d, %d): --fence write and read-write can be used", f1, f2)
	})
	if !t.silent.Load() && t.l.Err() == nil && notHeld < foreignFails {
		fmt.Fprintf(t.out, "  note  %d of the %d foreign-token extend/release fails carry no \"not_held\": true, so in a run a client whose lease the server denies works on to its own deadline (docs/protocol.md)\n",
			foreignFails-notHeld, foreignFails)
	}
}
