package lock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
// With ZooKeeper endpoints in cfg the server is a ZooKeeper ensemble: what is
// read behind the program's back is the key's lock znode (ZKLockPath), the
// lease is the program's session (cfg.TTL), and two more cases run a second
// copy of the program (mutual exclusion between two sessions) and stop the
// program until its session expires (the lost grant must not be extended).
//
// On Redlock's N primaries (cfg.Addrs) a key is held when a majority of the
// nodes hold it, and with opt.PauseNode one more case stops a minority of
// the nodes (SIGSTOP) around a grant: the program must still take, hold and
// give back the lock on the majority left.
func ClientTest(ctx context.Context, cfg Config, out io.Writer, opt ClientTestOptions) (ConformanceReport, error) {
	var rep ConformanceReport
	if ExecProgram(cfg.Recipe) == "" {
		return rep, fmt.Errorf("client-test: %q is not exec:PATH", cfg.Recipe)
	}
	t := &suite{opt: opt, ctx: ctx, cfg: cfg, out: out, opTimeout: cfg.OpTimeout, rep: &rep, silent: new(atomic.Bool)}
	if len(cfg.ZooKeeper) > 0 {
		conn, _, err := zk.Connect(cfg.ZooKeeper, 5*time.Second, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
		if err != nil {
			return rep, fmt.Errorf("connect to ZooKeeper: %w", err)
		}
		defer conn.Close()
		t.zk = conn
	} else if len(cfg.Etcd) > 0 {
		cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Etcd, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return rep, fmt.Errorf("connect to etcd: %w", err)
		}
		defer cli.Close()
		t.etcd = cli
	} else {
		// Redlock's N primaries are read one by one; elsewhere one client
		// (Sentinel's primary, one server, or the cluster client) is enough.
		one := []Config{cfg}
		if len(cfg.Addrs) > 0 {
			one = one[:0]
			for _, a := range cfg.Addrs {
				one = append(one, Config{Recipe: cfg.Recipe, Addr: a, DialMap: cfg.DialMap})
			}
		}
		for _, c := range one {
			raw, err := Connect(c)
			if err != nil {
				return rep, err
			}
			defer raw.Close()
			t.raws = append(t.raws, raw)
		}
	}
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
	// ChangeLeader kills the leader of the etcd members (restore restarts
	// it); nil: the leader-change case is not run.
	ChangeLeader func() (restore func() error, leader string, err error)
}

type suite struct {
	opt ClientTestOptions
	ctx context.Context
	cfg Config
	l   *execLock
	// raws: the Valkey behind the program (N nodes on Redlock, where what
	// a majority holds is what is held), or nil.
	raws      []valkey.Client
	etcd      *clientv3.Client // the etcd members behind it, or nil
	zk        *zk.Conn         // the ZooKeeper ensemble behind it, or nil
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
	if t.zk != nil {
		t.zkHolder(key, tok)
		return
	}
	if t.etcd != nil {
		t.etcdHolds(key, t.l.progToken(tok))
		return
	}
	want := t.l.progToken(tok)
	var seen []string
	holders := 0
	for _, raw := range t.raws {
		v, err := raw.Do(t.ctx, raw.B().Get().Key(key).Build()).ToString()
		switch {
		case valkey.IsValkeyNil(err):
			seen = append(seen, "none")
		case err != nil:
			panic(caseErr{fmt.Sprintf("GET %s: %v", key, err)})
		case v != want:
			seen = append(seen, fmt.Sprintf("%q", v))
		default:
			holders++
		}
	}
	switch {
	case holders >= t.majority():
	case len(t.raws) > 1:
		panic(caseErr{fmt.Sprintf("%s holds the grant's token %q on %d of %d nodes, not a majority (the others: %s)",
			key, want, holders, len(t.raws), strings.Join(seen, ", "))})
	case seen[0] == "none":
		panic(caseErr{fmt.Sprintf("the server has no %s: the lock is not held", key)})
	default:
		panic(caseErr{fmt.Sprintf("%s holds %s, not the grant's token %q (an ok acquire that stored another value must return it as \"token\")", key, seen[0], want)})
	}
}

// majority is how many of the nodes must hold a key for the lock to be held.
func (t *suite) majority() int { return len(t.raws)/2 + 1 }

func (t *suite) absent(key, why string) {
	if t.zk != nil {
		kids, err := t.zkKids(key)
		if err != nil {
			panic(caseErr{fmt.Sprintf("children of %s: %v", ZKLockPath(key), err)})
		}
		if len(kids) > 0 {
			panic(caseErr{fmt.Sprintf("%s still has %s: %s", ZKLockPath(key), strings.Join(kids, ", "), why)})
		}
		return
	}
	if t.etcd != nil {
		t.etcdAbsent(key, why)
		return
	}
	for i, raw := range t.raws {
		n, err := raw.Do(t.ctx, raw.B().Exists().Key(key).Build()).AsInt64()
		if err != nil {
			panic(caseErr{fmt.Sprintf("EXISTS %s: %v", key, err)})
		}
		if n != 0 {
			panic(caseErr{fmt.Sprintf("%s still exists%s: %s", key, t.onNode(i), why)})
		}
	}
}

// onNode names node i where there are several.
func (t *suite) onNode(i int) string {
	if len(t.raws) == 1 {
		return ""
	}
	return fmt.Sprintf(" on node %d of %d", i+1, len(t.raws))
}

// pttls is the key's PTTL on every node that has it.
func (t *suite) pttls(key string) []time.Duration {
	if t.etcd != nil {
		return t.etcdTTL(key)
	}
	var out []time.Duration
	for _, raw := range t.raws {
		v, err := raw.Do(t.ctx, raw.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			panic(caseErr{fmt.Sprintf("PTTL %s: %v", key, err)})
		}
		if v != -2 || len(t.raws) == 1 {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
	}
	return out
}

func (t *suite) pttlWithin(key string, lo, hi time.Duration, what string) {
	for _, p := range t.pttls(key) {
		if p < lo || p > hi {
			panic(caseErr{fmt.Sprintf("%s: PTTL %v, want %v to %v", what, p, lo, hi)})
		}
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
	t.acquire("acquire of a fresh key (the case's set-up)", key, tok, t.ttl(ttl), history.OK)
	return key, tok
}

// drop deletes key directly on the server, whatever the case left.
func (t *suite) drop(key string) {
	if t.zk != nil {
		dir := ZKLockPath(key)
		kids, _ := t.zkKids(key)
		for _, k := range kids {
			_ = t.zkDo(func() error { return t.zk.Delete(dir+"/"+k, -1) })
		}
		_ = t.zkDo(func() error { return t.zk.Delete(dir, -1) })
		return
	}
	if t.etcd != nil {
		t.etcdDrop(key)
		return
	}
	for _, raw := range t.raws {
		_ = raw.Do(context.WithoutCancel(t.ctx), raw.B().Del().Key(key).Build()).Error()
	}
}

func (t *suite) run() {
	var fenceA int64
	t.check("acquire a free key", func() string {
		k, a := t.key(), NewToken()
		defer t.drop(k)
		fenceA = t.acquire("acquire", k, a, t.ttl(5*time.Second), history.OK)
		if t.zk != nil {
			t.zkFence(k, a, fenceA)
			return "an ephemeral znode of the program's session holds " + ZKLockPath(k) + " with the grant's token"
		}
		t.etcdFence(k, a, fenceA)
		t.holds(k, a)
		t.pttlWithin(k, 4*time.Second, 5*time.Second, "TTL 5 s")
		return "the key holds the grant's token with its TTL"
	})
	t.check("refuse a held key", func() string {
		k, a := t.fresh(5 * time.Second)
		defer t.drop(k)
		t.acquire("acquire by another token", k, NewToken(), t.ttl(5*time.Second), history.Fail)
		t.holds(k, a)
		return ""
	})
	if t.zk != nil || t.etcd != nil {
		// The lease is the session, whose timeout was fixed at connect, or
		// an etcd lease, whose TTL was fixed at its grant: an extend keeps
		// it alive for that long, and the key must stay.
		t.check("extend with its own token", func() string {
			k, a := t.fresh(5 * time.Second)
			defer t.drop(k)
			t.extend("extend", k, a, t.ttl(5*time.Second), history.OK)
			t.holds(k, a)
			if t.etcd != nil {
				t.pttlWithin(k, 3*time.Second, 5*time.Second, "extend renews the lease to its TTL")
				return "the lease renewed and the key stays"
			}
			return "the session is alive and the znode stays"
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
		if t.zk == nil {
			t.pttlWithin(k, 0, 3*time.Second, "a refused extend must not change the TTL")
		}
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
	switch {
	case t.zk != nil:
		t.check("session expiry", t.sessionExpiry)
		t.check("two processes: mutual exclusion", t.twoProcesses)
	case t.etcd != nil:
		t.check("lease expiry", t.leaseExpiry)
	default:
		t.check("expiry", t.expiry)
	}
	if t.etcd != nil && t.opt.ChangeLeader != nil {
		t.check("the leader killed mid-grant", t.leaderChange)
	}
	if len(t.raws) > 1 && t.opt.PauseNode != nil {
		t.check("a minority of the nodes stopped", t.minorityDown)
	}
	if t.opt.MoveSlot != nil {
		t.check("the key's slot moved mid-grant (ASK, then MOVED)", t.slotMoved)
	}
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
				t.acquire("acquire "+key, key, tok, t.ttl(5*time.Second), history.OK)
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
		defer t.drop(k3)
		f1 := t.acquire("acquire", k3, e, t.ttl(5*time.Second), history.OK)
		t.zkFence(k3, e, f1)
		t.etcdFence(k3, e, f1)
		t.release("release", k3, e, history.OK)
		f2 := t.acquire("acquire again", k3, f, t.ttl(5*time.Second), history.OK)
		t.zkFence(k3, f, f2)
		t.etcdFence(k3, f, f2)
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

// expiry: a grant whose TTL ran out is gone, cannot be extended back, and
// its release does not free the next holder's lock.
func (t *suite) expiry() string {
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
}

// minorityDown stops the first N - majority nodes and takes, checks and
// gives back a grant on the nodes left: Redlock is meant to live through a
// minority's loss. The stopped nodes answer nothing (the program's per-node
// timeouts run out there), and are resumed before the case ends.
func (t *suite) minorityDown() string {
	down := len(t.raws) - t.majority()
	var resumes []func() error
	defer func() {
		for _, r := range resumes {
			_ = r()
		}
	}()
	for i := range down {
		r, err := t.opt.PauseNode(i)
		if err != nil {
			panic(caseErr{fmt.Sprintf("stop node %d: %v", i+1, err)})
		}
		resumes = append(resumes, r)
	}
	live := t.raws
	t.raws = t.raws[down:] // only the live nodes can be read
	defer func() { t.raws = live }()
	k, a := t.key(), NewToken()
	defer t.drop(k)
	t.acquire("acquire with a minority stopped", k, a, t.ttl(5*time.Second), history.OK)
	holders := t.countHolding(k, a)
	if holders < len(live)/2+1 {
		panic(caseErr{fmt.Sprintf("an ok acquire left the token on %d of the %d live nodes: %d of %d make a majority", holders, len(t.raws), len(live)/2+1, len(live))})
	}
	t.release("release with a minority stopped", k, a, history.OK)
	t.absent(k, "the release must free the live nodes")
	return fmt.Sprintf("%d of %d nodes stopped: granted and freed on the %d left", down, len(live), len(t.raws))
}

// slotMoved moves a held key's slot to another primary in the legacy way:
// while the move is open the key is already on the target and the source
// answers ASK, so the holder's extend and another token's acquire must
// follow ASK (ASKING on the target); once it closes the source answers
// MOVED, which the release must follow. A client that does not follow the
// redirects fails its operations; one that follows ASK as if it were MOVED
// still works here, at the cost of a slot-map reload.
func (t *suite) slotMoved() string {
	k, a := t.fresh(5 * time.Second)
	defer t.drop(k)
	done, err := t.opt.MoveSlot(k)
	if err != nil {
		panic(caseErr{fmt.Sprintf("move the slot of %s: %v", k, err)})
	}
	closed := false
	defer func() {
		if !closed {
			_ = done()
		}
	}()
	t.extend("extend while the slot migrates (ASK)", k, a, t.ttl(5*time.Second), history.OK)
	t.acquire("acquire with another token while the slot migrates (ASK)", k, NewToken(), t.ttl(5*time.Second), history.Fail)
	t.holds(k, a)
	t.pttlWithin(k, 4*time.Second, 5*time.Second, "the extend on the target")
	closed = true
	if err := done(); err != nil {
		panic(caseErr{fmt.Sprintf("close the move of %s: %v", k, err)})
	}
	t.release("release after the move (MOVED)", k, a, history.OK)
	t.absent(k, "the release must free the key on its new primary")
	return "extend and a refused acquire followed ASK, the release MOVED"
}

// countHolding is how many nodes hold key with the program's token for tok.
func (t *suite) countHolding(key, tok string) int {
	want, n := t.l.progToken(tok), 0
	for _, raw := range t.raws {
		if v, err := raw.Do(t.ctx, raw.B().Get().Key(key).Build()).ToString(); err == nil && v == want {
			n++
		}
	}
	return n
}

// ttl is the lease a case asks for: d on Valkey; on ZooKeeper the session's
// timeout (cfg.TTL), fixed when the program connected, which is all it can
// promise.
func (t *suite) ttl(d time.Duration) time.Duration {
	if t.zk != nil {
		return t.cfg.TTL
	}
	return d
}

// zkDo runs one request of the suite's own ZooKeeper session, within 5 s.
func (t *suite) zkDo(call func() error) error {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	return zkDo(ctx, call)
}

// zkKids lists the znodes under key's lock path (none when it is absent).
// A sync first: the suite's session may read from another member than the
// program's, a follower that has not yet applied the program's last write
// (seen: a refused acquire's deleted znode still listed there).
func (t *suite) zkKids(key string) ([]string, error) {
	var kids []string
	err := t.zkDo(func() (err error) {
		if _, err = t.zk.Sync(ZKLockPath(key)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		kids, _, err = t.zk.Children(ZKLockPath(key))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// zkHolder checks that key's lock path holds one znode, the grant's: an
// ephemeral one (a lost session frees it) carrying the program's token in its
// name or as its data, and nothing else: a refused or released acquire that
// left its znode behind would queue for the lock and take it later. It
// returns the znode's stat.
func (t *suite) zkHolder(key, tok string) *zk.Stat {
	dir, want := ZKLockPath(key), t.l.progToken(tok)
	kids, err := t.zkKids(key)
	switch {
	case err != nil:
		panic(caseErr{fmt.Sprintf("children of %s: %v", dir, err)})
	case len(kids) == 0:
		panic(caseErr{fmt.Sprintf("%s has no znode: the lock is not held (on ZooKeeper a program keeps key K's lock under /lockjepsen/K, docs/protocol.md)", dir)})
	case len(kids) > 1:
		panic(caseErr{fmt.Sprintf("%s has %d znodes (%s), want the holder's alone: a refused or released acquire left its znode behind, to take the lock later", dir, len(kids), strings.Join(kids, ", "))})
	}
	var data []byte
	var st *zk.Stat
	if err := t.zkDo(func() (err error) { data, st, err = t.zk.Get(dir + "/" + kids[0]); return err }); err != nil {
		panic(caseErr{fmt.Sprintf("get %s/%s: %v", dir, kids[0], err)})
	}
	if st.EphemeralOwner == 0 {
		panic(caseErr{fmt.Sprintf("%s/%s is not ephemeral: a lost session would never free the lock", dir, kids[0])})
	}
	if !strings.Contains(kids[0], want) && string(data) != want {
		panic(caseErr{fmt.Sprintf("%s/%s carries the grant's token %q neither in its name nor as its data (%q)", dir, kids[0], want, data)})
	}
	return st
}

// zkFence checks the holder's znode and, when the acquire returned a fence,
// that it is that znode's czxid (docs/protocol.md): the history then names
// the fence's source (zk-czxid) truthfully.
func (t *suite) zkFence(key, tok string, fence int64) {
	if t.zk == nil {
		return
	}
	st := t.zkHolder(key, tok)
	if fence > 0 && fence != st.Czxid {
		panic(caseErr{fmt.Sprintf("fence %d is not the holder znode's czxid %d: on ZooKeeper the fence is the lock znode's czxid (docs/protocol.md)", fence, st.Czxid)})
	}
}

// sessionExpiry stops the program (SIGSTOP: its heartbeats stop) until the
// ensemble expires its session and deletes the grant's znode, then resumes
// it: the grant is lost, and an extend or release of it must not say ok.
// kazoo's Lock, for one, still calls itself acquired then.
func (t *suite) sessionExpiry() string {
	k, a := t.fresh(5 * time.Second)
	defer t.drop(k)
	p := t.l.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		panic(caseErr{fmt.Sprintf("SIGSTOP the program: %v", err)})
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = p.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	start := time.Now()
	// The leader expires a session in buckets of one tick, after its
	// timeout (the TTL): allow twice that.
	for deadline := start.Add(2*t.cfg.TTL + 2*time.Second); ; time.Sleep(100 * time.Millisecond) {
		if kids, err := t.zkKids(k); err == nil && len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			panic(caseErr{fmt.Sprintf("the program stopped for %v and its znode under %s is still there: is its session timeout LOCKJEPSEN_TTL_MS (%v)?",
				time.Since(start).Round(time.Millisecond), ZKLockPath(k), t.cfg.TTL)})
		}
	}
	expired := time.Since(start).Round(100 * time.Millisecond)
	resume()
	// Back from the stop, the program first finds its connection dead (an
	// info, which proves nothing and is allowed), then learns of the
	// expiry; it must never answer ok.
	var r Result
	for deadline := time.Now().Add(t.cfg.TTL + 3*time.Second); ; {
		r = t.expectNot("extend of the lost grant", history.OK, func(ctx context.Context) Result { return t.l.Extend(ctx, k, a, t.cfg.TTL) })
		if r.Outcome == history.Fail || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.Outcome != history.Fail {
		panic(caseErr{fmt.Sprintf("extend of the lost grant still ended %s (%v) %v after the resume, want fail", r.Outcome, r.Err, t.cfg.TTL+3*time.Second)})
	}
	t.absent(k, "an extend must not bring a lost grant back")
	b := NewToken()
	t.acquire("acquire after the session expired", k, b, t.cfg.TTL, history.OK)
	t.release("release of the lost grant", k, a, history.Fail)
	t.holds(k, b)
	t.release("release", k, b, history.OK)
	note := fmt.Sprintf("stopped, the session expired in %v and its znode went; resumed, the lost grant's extend failed", expired)
	if NotHeld(r) {
		note += " with not_held"
	}
	return note
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

// twoProcesses starts a second copy of the program, a second session (as a
// run's second client does), and checks mutual exclusion between the two:
// each refuses the key while the other holds it and takes it once released.
func (t *suite) twoProcesses() string {
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
