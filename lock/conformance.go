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
//
// What is read there, and the cases each deployment adds (a session's
// expiry, a lease's, a minority of Redlock's nodes stopped, a slot moved,
// the leader killed, a holder's backend terminated), live beside its server
// in conformance_*.go.
func ClientTest(ctx context.Context, cfg Config, out io.Writer, opt ClientTestOptions) (ConformanceReport, error) {
	var rep ConformanceReport
	if ExecProgram(cfg.Recipe) == "" {
		return rep, fmt.Errorf("client-test: %q is not exec:PATH", cfg.Recipe)
	}
	t := &suite{opt: opt, ctx: ctx, cfg: cfg, out: out, opTimeout: cfg.OpTimeout, rep: &rep, silent: new(atomic.Bool)}
	srv, err := newServer(cfg)
	if err != nil {
		return rep, err
	}
	defer srv.close()
	t.srv = srv
	lk, err := openExec(cfg)
	if err != nil {
		return rep, err
	}
	t.l = lk.(*execLock)
	defer t.l.Close()
	if t.opTimeout <= 0 {
		t.opTimeout = 2 * time.Second
	}
	t.run()
	rep.Protocol = t.l.Err()
	return rep, nil
}

// ClientTestOptions are what client-test's deployment lets the suite do
// behind the program's back.
type ClientTestOptions struct {
	// PauseNode stops node i of cfg.Addrs (SIGSTOP) until resume is called;
	// nil: the minority case is not run.
	PauseNode func(i int) (resume func() error, err error)
	// MoveSlot opens a move of key's slot to another primary of a Valkey
	// Cluster and migrates its keys, so that the source answers ASK for
	// them; done closes the move (MOVED from then on). nil: the slot case
	// is not run.
	MoveSlot func(key string) (done func() error, err error)
	// ChangeLeader kills the leader of a consensus service's members
	// (restore restarts it); nil: the leader-change case is not run.
	ChangeLeader func() (restore func() error, leader string, err error)
}

type suite struct {
	opt       ClientTestOptions
	ctx       context.Context
	cfg       Config
	l         *execLock
	srv       server // the deployment behind the program
	out       io.Writer
	opTimeout time.Duration
	rep       *ConformanceReport
	silent    *atomic.Bool // the program stopped answering: the rest is skipped
	n         int
}

// with is the suite driving another copy of the program (a second client).
func (t *suite) with(l *execLock) *suite {
	u := *t
	u.l = l
	return &u
}

// server is the deployment behind the program as the suite reads it, behind
// the program's back, one kind per file (conformance_*.go): where key K's
// lock lives there, how a grant ends without a release, and the cases only
// that deployment has. Each method fails the case with a caseErr.
type server interface {
	// holds checks that the server holds key for the grant of tok.
	holds(t *suite, key, tok string)
	absent(t *suite, key, why string)
	// ttls is what is left of key's lease on each node that keeps one for
	// the key; nil where the lease is not the key's (a session's).
	ttls(t *suite, key string) []time.Duration
	// drop deletes what the case left of key, behind the program's back.
	drop(t *suite, key string)
	// fence checks the program's grant of key and a fence it returned
	// against the fence's source on this server, where it has one.
	fence(t *suite, key, tok string, fence int64)
	// lease is the TTL a case asks for, given what it wants (d).
	lease(t *suite, d time.Duration) time.Duration
	// extendSetsTTL: an extend sets the key's TTL to ttl_ms from now
	// (Valkey); false where the lease's length was fixed at its grant.
	extendSetsTTL() bool
	// says what a grant of key is on this server, and what an extend
	// kept, for the PASS lines.
	says(key string) (held, extended string)
	// cases are the deployment's own, run after the common ones.
	cases(t *suite) []tcase
	close()
}

// tcase is one named case.
type tcase struct {
	name string
	body func() string
}

// newServer connects to the deployment cfg names: through the conformance
// server of the protocol's built-in recipe (execHost), Valkey's otherwise.
func newServer(cfg Config) (server, error) {
	if h, ok := cfg.execHost(); ok && h.conform != nil {
		return h.conform(cfg)
	}
	return newValkeyServer(cfg)
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

// holds checks that the server holds key for the grant of tok.
func (t *suite) holds(key, tok string) { t.srv.holds(t, key, tok) }

func (t *suite) absent(key, why string) { t.srv.absent(t, key, why) }

// pttlWithin checks what is left of key's lease where the server keeps one
// per key (Valkey's PTTL, a consensus service's lease).
func (t *suite) pttlWithin(key string, lo, hi time.Duration, what string) {
	for _, p := range t.srv.ttls(t, key) {
		if p < lo || p > hi {
			panic(caseErr{fmt.Sprintf("%s: PTTL %v, want %v to %v", what, p, lo, hi)})
		}
	}
}

// ttl is the lease a case asks for, as the server can promise it.
func (t *suite) ttl(d time.Duration) time.Duration { return t.srv.lease(t, d) }

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
	t.acquire("acquire of a fresh key (the case's set-up)", key, tok, t.ttl(ttl), history.OK)
	return key, tok
}

// drop deletes key directly on the server, whatever the case left.
func (t *suite) drop(key string) { t.srv.drop(t, key) }

func (t *suite) run() {
	var fenceA int64
	t.check("acquire a free key", func() string {
		k, a := t.key(), NewToken()
		defer t.drop(k)
		fenceA = t.acquire("acquire", k, a, t.ttl(5*time.Second), history.OK)
		t.srv.fence(t, k, a, fenceA)
		t.holds(k, a)
		t.pttlWithin(k, 4*time.Second, 5*time.Second, "TTL 5 s")
		held, _ := t.srv.says(k)
		return held
	})
	t.check("refuse a held key", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.acquire("acquire by another token", k, NewToken(), t.ttl(5*time.Second), history.Fail)
		t.holds(k, a)
		return ""
	})
	t.extendCases()
	// Of the foreign-token extends and releases that failed as they must,
	// how many said "not_held": the summary speaks of those only, not of
	// one that wrongly succeeded (its own case fails and says so).
	foreignFails, notHeld := 0, 0
	t.check("extend with a foreign token", func() string {
		k, a := t.fresh(3 * time.Second)
		defer t.drop(k)
		r := t.extend("extend by another token", k, NewToken(), t.ttl(9*time.Second), history.Fail)
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
		t.extend("extend after release", k, a, t.ttl(5*time.Second), history.Fail)
		t.absent(k, "an extend must not bring a released lock back")
		return ""
	})
	// The deployment's own cases: how a grant ends there without a release
	// (a TTL, a lease, a session), and its faults.
	for _, c := range t.srv.cases(t) {
		t.check(c.name, c.body)
	}
	t.replyCases()
	t.check("concurrent requests on 8 keys", t.concurrent)
	t.check("fences", func() string { return t.fences(fenceA) })
	if !t.silent.Load() && t.l.Err() == nil && notHeld < foreignFails {
		fmt.Fprintf(t.out, "  note  %d of the %d foreign-token extend/release fails carry no \"not_held\": true, so in a run a client whose lease the server denies works on to its own deadline (docs/protocol.md)\n",
			foreignFails-notHeld, foreignFails)
	}
}

// expectNot runs one operation and fails the case if it ended bad; an info
// within the operation's timeout is returned, not a failure.
func (t *suite) expectNot(what string, bad history.Type, op func(context.Context) Result) Result {
	ctx, cancel := context.WithTimeout(t.ctx, t.opTimeout)
	defer cancel()
	r := op(ctx)
	if r.Outcome == bad {
		panic(caseErr{fmt.Sprintf("%s ended %s, want anything else", what, bad)})
	}
	return r
}

// twoProcesses (a lock held by a session) starts a second copy of the program, a second session (as a
// run's second client does), and checks mutual exclusion between the two:
// each refuses the key while the other holds it and takes it once released.
func twoProcesses(t *suite) string {
	cfg := t.cfg
	cfg.Client = 1
	lk, err := openExec(cfg)
	if err != nil {
		panic(caseErr{fmt.Sprintf("start a second copy: %v", err)})
	}
	defer lk.Close()
	u := t.with(lk.(*execLock))
	k, a, b, c := t.key(), NewToken(), NewToken(), NewToken()
	defer t.drop(k)
	t.acquire("acquire by the first", k, a, t.cfg.TTL, history.OK)
	u.acquire("acquire by the second while the first holds", k, b, t.cfg.TTL, history.Fail)
	t.holds(k, a)
	t.release("release by the first", k, a, history.OK)
	u.acquire("acquire by the second after the release", k, b, t.cfg.TTL, history.OK)
	u.holds(k, b)
	t.acquire("acquire by the first while the second holds", k, c, t.cfg.TTL, history.Fail)
	u.holds(k, b)
	u.release("release by the second", k, b, history.OK)
	t.absent(k, "both released")
	if err := u.l.Err(); err != nil {
		panic(caseErr{fmt.Sprintf("the second copy: %v", err)})
	}
	return "each refused the key while the other's session held it"
}

// extendCases: an extend with the grant's own token, as the server keeps a
// lease.
func (t *suite) extendCases() {
	if !t.srv.extendSetsTTL() {
		// The lease is a session, whose timeout was fixed at connect, or
		// a lease whose TTL was fixed at its grant: an extend keeps
		// it alive for that long, and the key must stay.
		t.check("extend with its own token", func() string {
			k, a := t.fresh(5 * time.Second)
			defer t.drop(k)
			t.extend("extend", k, a, t.ttl(5*time.Second), history.OK)
			t.holds(k, a)
			t.pttlWithin(k, 3*time.Second, 5*time.Second, "extend renews the lease to its TTL")
			_, kept := t.srv.says(k)
			return kept
		})
	} else {
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
	}
}

// concurrent sends the acquires and releases of 8 keys at once: the
// program must answer each by its id.
func (t *suite) concurrent() string {
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
			t.acquire("acquire "+key, key, tok, t.ttl(5*time.Second), history.OK)
			t.release("release "+key, key, tok, history.OK)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		panic(caseErr{err.Error()})
	}
	return "answers matched by id"
}

// fences: two grants of one key in a row return positive, increasing fences,
// each checked against its source; fenceA is the first case's (0: none).
func (t *suite) fences(fenceA int64) string {
	if fenceA <= 0 {
		return "none returned: runs need --fence none with this program"
	}
	k3, e, f := t.key(), NewToken(), NewToken()
	defer t.drop(k3)
	f1 := t.acquire("acquire", k3, e, t.ttl(5*time.Second), history.OK)
	t.srv.fence(t, k3, e, f1)
	t.release("release", k3, e, history.OK)
	f2 := t.acquire("acquire again", k3, f, t.ttl(5*time.Second), history.OK)
	t.srv.fence(t, k3, f, f2)
	t.release("release", k3, f, history.OK)
	if f1 <= 0 || f2 <= f1 {
		panic(caseErr{fmt.Sprintf("fences %d then %d on one key: want positive and increasing", f1, f2)})
	}
	t.rep.Fences = true
	return fmt.Sprintf("returned and increasing (%d, %d): --fence write and read-write can be used", f1, f2)
}
