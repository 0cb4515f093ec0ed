package lock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
)

// FenceZxid is recipe zk-lock's fence source: the lock znode's creation zxid (Zab's log order).
const FenceZxid = "zk-czxid"

// zkLockRecipe is the recipe's catalog entry (recipes, config.go).
var zkLockRecipe = Recipe{Name: ZKLock, Summary: "the ZooKeeper docs' lock recipe (go-zookeeper/zk): an ephemeral sequential znode per waiter, each watching its predecessor, on a session whose timeout is the TTL; fence = the znode's czxid (no Valkey)", Ours: true, Lacks: func(Caps) []string { return nil }, open: openZKLock, Speaks: []endpoint.Protocol{endpoint.ZooKeeper}, Server: checkZooKeeper, Fence: FenceZxid, Valid: (*Config).validateZooKeeper, FenceOnDemand: true, HostsExec: true, Library: Library{Module: "github.com/go-zookeeper/zk", Name: "go-zookeeper"},
	conform: func(c Config) (server, error) { return newZKServer(c) }}

// ZKLock is the ZooKeeper recipe.
const ZKLock = "zk-lock"

// zkRoot is the persistent znode under which every lock key has its own.
const zkRoot = "/lockjepsen"

// zkLock is the lock recipe of the ZooKeeper documentation ("Recipes and
// Solutions": Locks) on go-zookeeper/zk's connection primitives; that
// library's own Lock blocks without a deadline and hides the node it made,
// whose creation zxid is the fence, so the recipe is written here:
//
//   - session: one per client process (zk.Connect), its timeout the lock's
//     TTL. The library pings every third of it; the server (the leader)
//     expires a session it has not heard from for the timeout and deletes
//     its ephemeral znodes. The session is the lease.
//   - acquire: create <root>/<key>/<token>-lock- as an ephemeral sequential
//     znode (the token is the docs' GUID: after a create whose answer was
//     lost, the release finds the znode among the children by it);
//     list the children; the lowest sequence number holds the lock. Any
//     other waits, watching only its predecessor (exists with a watch: no
//     herd effect), and lists again when it goes, until the operation's
//     deadline: then it deletes its own znode and fails. Once it holds, one
//     write (set on its own znode) returns the znode's stat: its czxid is
//     the fence, and the write touches the session at a time the history's
//     acquire interval contains, so that the lease the history reads from
//     it (TTL from then) ends no later than the server can expire it.
//   - fence: czxid, the zxid of the transaction that created the znode.
//     Sequence numbers follow zxid order, and the holder is the lowest
//     living, so every holder's czxid exceeds the ones before it; zxids
//     never go backwards, across leader changes too (a new epoch is higher).
//   - extend: one more set on the holder's znode, a write through the
//     leader: ok means the znode, hence the session, was alive then, and it
//     touched the session, so the lease runs a TTL from the call at least.
//     No node means the session expired and the znode went with it: a
//     definite loss (fail, not held).
//   - release: list the children, then delete our znode; not held when it
//     is gone (the session expired) or when it was a waiter's (after an
//     acquire whose outcome was lost). A znode whose release lost its answer
//     is an orphan: the client's next acquire, on any key, deletes it first, since it
//     would otherwise hold or queue for the lock as long as the session
//     lives (seen under zk-pause-leader: two orphans blocked both keys for
//     the rest of the run, 7 grants in 25 s).
//
// Outcomes: ZooKeeper's own answers are definite; a request whose deadline
// passed or whose connection dropped may have taken effect (info).
type zkLock struct {
	cfg  Config
	conn *zk.Conn

	mu      sync.Mutex
	parents map[string]bool            // lock keys whose parent znode exists
	holds   map[string]zkHold          // token -> its znode, from acquire to release
	orphans map[string]map[string]bool // parent -> tokens whose znode may have outlived its release
}

// zkHold is a token's znode: <dir>/<token>-lock-<sequence number>. The
// token in the name is the recipe's GUID: after a create whose answer was
// lost the client finds its znode among the children by it.
type zkHold struct {
	dir  string
	path string // "" until the create is answered
}

// zkQuiet drops the library's log lines: the client's stdout is its event
// stream, and every error reaches the history through the operations.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

func openZKLock(cfg Config) (Lock, error) {
	conn, _, err := zk.Connect(cfg.Service.Addrs, ZKSessionTimeout(cfg.TTL), zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper: %w", err)
	}
	return &zkLock{cfg: cfg, conn: conn, parents: map[string]bool{}, holds: map[string]zkHold{}, orphans: map[string]map[string]bool{}}, nil
}

// ZKSessionTimeout is the session asked of ZooKeeper for a TTL: the TTL
// itself, at least the servers' minimum (two ticks), so that the lease the
// history records is never longer than the session.
func ZKSessionTimeout(ttl time.Duration) time.Duration {
	return max(ttl, 400*time.Millisecond)
}

func (l *zkLock) Recipe() string                      { return ZKLock }
func (l *zkLock) SelfRenewing() bool                  { return false }
func (l *zkLock) Lost(string, string) <-chan struct{} { return nil }
func (l *zkLock) SafeRelease() bool                   { return true }
func (l *zkLock) Observe(Observer)                    {}

// Close ends the session: its ephemeral znodes go at once.
func (l *zkLock) Close() { l.conn.Close() }

// zkDo runs a blocking library call until ctx is done: the library's
// requests have no deadline of their own (they end when the connection
// does), and a request abandoned here may still take effect.
func zkDo(ctx context.Context, call func() error) error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// zkResult maps a library error: the server's answers are definite (fail),
// a deadline or a lost connection unknown (info).
func zkResult(what string, err error) Result {
	switch {
	case err == nil:
		return ok()
	case errors.Is(err, zk.ErrNoNode):
		return fail(fmt.Errorf("%s: %w: the session expired and its znode went with it (%w)", what, err, ErrNotHeld))
	case errors.Is(err, zk.ErrSessionExpired):
		return fail(fmt.Errorf("%s: %w (%w)", what, err, ErrNotHeld))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrNoServer):
		return Result{history.Info, fmt.Errorf("%s: %w", what, err)}
	}
	return fail(fmt.Errorf("%s: %w", what, err))
}

// ZKLockPath is the znode under which key's lock lives, for zk-lock and for
// an exec program on ZooKeeper alike (docs/protocol.md), where client-test
// reads it: /lockjepsen/<key>.
func ZKLockPath(key string) string { return path.Join(zkRoot, zkName(key)) }

// parent makes <root>/<key> (and the root) once per key.
func (l *zkLock) parent(ctx context.Context, key string) (string, error) {
	p := ZKLockPath(key)
	l.mu.Lock()
	known := l.parents[p]
	l.mu.Unlock()
	if known {
		return p, nil
	}
	for _, q := range []string{zkRoot, p} {
		err := zkDo(ctx, func() error {
			_, err := l.conn.Create(q, nil, 0, zk.WorldACL(zk.PermAll))
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return p, fmt.Errorf("create %s: %w", q, err)
		}
	}
	l.mu.Lock()
	l.parents[p] = true
	l.mu.Unlock()
	return p, nil
}

// zkName makes a lock key a znode name: '/' would be a path separator.
func zkName(key string) string { return strings.ReplaceAll(key, "/", "_") }

func (l *zkLock) Acquire(ctx context.Context, key, token string, _ time.Duration) (int64, Result) {
	dir, err := l.parent(ctx, key)
	if err != nil {
		return 0, fail(err) // no lock znode was made
	}
	l.reapAll(ctx)
	l.mu.Lock()
	l.holds[token] = zkHold{dir: dir}
	l.mu.Unlock()
	var mine string
	err = zkDo(ctx, func() error {
		p, err := l.conn.Create(dir+"/"+token+"-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err == nil {
			l.mu.Lock()
			if _, ok := l.holds[token]; ok { // else released first: reaped later
				l.holds[token] = zkHold{dir: dir, path: p}
			}
			l.mu.Unlock()
			mine = p
		}
		return err
	})
	if err != nil {
		r := zkResult("create", err)
		if r.Outcome == history.Fail {
			l.forget(token)
		}
		return 0, r
	}
	czxid, r := l.await(ctx, dir, mine)
	if r.Outcome == history.Fail {
		l.forget(token)
	}
	return czxid, r
}

func (l *zkLock) forget(token string) {
	l.mu.Lock()
	delete(l.holds, token)
	l.mu.Unlock()
}

// orphan notes a token whose znode may exist after its release (the
// release or the create lost its answer): left alone it would hold or queue
// for the lock as long as the session lives, the client's whole run.
func (l *zkLock) orphan(dir, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.orphans[dir] == nil {
		l.orphans[dir] = map[string]bool{}
	}
	l.orphans[dir][token] = true
}

// reapAll reaps the orphans under every lock key, not only the one this
// acquire is for: a client that goes on to other keys never came back for an
// orphan under the first, which then held the lock for the rest of the run
// (the soak's zk-pause-leader seed 1: an acquire whose cleanup and release
// both lost their answers under a paused leader left its waiter's znode on
// lock:{job-2}; it became the holder, and 136 acquires by others were refused
// over the last 18 s, a stuck lock). Any later acquire by that client now
// deletes it.
func (l *zkLock) reapAll(ctx context.Context) {
	l.mu.Lock()
	dirs := make([]string, 0, len(l.orphans))
	for d := range l.orphans {
		dirs = append(dirs, d)
	}
	l.mu.Unlock()
	for _, d := range dirs {
		l.reap(ctx, d)
	}
}

// reap deletes the orphaned znodes under dir, found by their token, before
// the next acquire queues behind them. A token with no znode left is
// dropped; a listing that fails leaves them for the next acquire.
func (l *zkLock) reap(ctx context.Context, dir string) {
	l.mu.Lock()
	tokens := l.orphans[dir]
	delete(l.orphans, dir)
	l.mu.Unlock()
	if len(tokens) == 0 {
		return
	}
	var kids []string
	if err := zkDo(ctx, func() (err error) { kids, _, err = l.conn.Children(dir); return err }); err != nil {
		for t := range tokens {
			l.orphan(dir, t)
		}
		return
	}
	for _, k := range kids {
		t, _, _ := strings.Cut(k, "-lock-")
		if !tokens[t] {
			continue
		}
		if err := zkDo(ctx, func() error { return l.conn.Delete(dir+"/"+k, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			l.orphan(dir, t)
		}
	}
}

// await is the recipe's wait: list the children; the lowest holds; else
// watch the predecessor and list again when it goes. At the deadline the
// waiter takes its znode back (fail), or cannot say (info).
func (l *zkLock) await(ctx context.Context, dir, mine string) (int64, Result) {
	name := path.Base(mine)
	// The wait ends a quarter of the time left before the deadline, so
	// that a grant at its very end still has time for the confirming write
	// (without it, 3 of the 65 acquires of a zk-paused-client run were
	// unknown, 2 of them past the deadline at that write).
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-time.Until(dl)/4))
		defer cancel()
	}
	for {
		var kids []string
		err := zkDo(ctx, func() (err error) { kids, _, err = l.conn.Children(dir); return err })
		if err != nil {
			return 0, l.giveUp(mine, zkResult("children", err))
		}
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(zkSeq(a), zkSeq(b)) })
		i := slices.Index(kids, name)
		if i < 0 {
			return 0, fail(fmt.Errorf("children of %s: %s is gone, the session expired (%w)", dir, name, ErrNotHeld))
		}
		if i == 0 {
			return l.confirm(ctx, mine)
		}
		var gone bool
		var ev <-chan zk.Event
		err = zkDo(ctx, func() (err error) {
			var there bool
			there, _, ev, err = l.conn.ExistsW(dir + "/" + kids[i-1])
			gone = !there
			return err
		})
		if err != nil {
			return 0, l.giveUp(mine, zkResult("exists "+kids[i-1], err))
		}
		if gone {
			continue
		}
		select {
		case <-ev:
		case <-wctx.Done():
			// A predecessor still there at the deadline: someone holds the
			// lock (or waits ahead), the lock working.
			return 0, l.giveUp(mine, Result{history.Info, fmt.Errorf("waited for %s: %w: another client holds the lock", kids[i-1], wctx.Err())})
		}
	}
}

// confirm is the holder's first write: its znode's stat (czxid, the fence)
// and a touch of the session inside the acquire's interval.
func (l *zkLock) confirm(ctx context.Context, mine string) (int64, Result) {
	var st *zk.Stat
	err := zkDo(ctx, func() (err error) { st, err = l.conn.Set(mine, nil, -1); return err })
	if err != nil {
		return 0, zkResult("set "+mine, err)
	}
	if !l.cfg.Fencing {
		return 0, ok()
	}
	return st.Czxid, ok()
}

// giveUp deletes a waiter's znode when the wait ended without the lock:
// the acquire failed if the delete is answered, else nobody knows (the
// znode may hold the lock later), info.
func (l *zkLock) giveUp(mine string, why Result) Result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := zkDo(ctx, func() error { return l.conn.Delete(mine, -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return fail(fmt.Errorf("%w; deleted %s", why.Err, mine))
	}
	return Result{history.Info, fmt.Errorf("%w; delete %s: %w", why.Err, mine, err)}
}

// zkSeq is a sequential znode's number: the ten digits ZooKeeper appends.
func zkSeq(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

func (l *zkLock) Extend(ctx context.Context, key, token string, _ time.Duration) Result {
	l.mu.Lock()
	h := l.holds[token]
	l.mu.Unlock()
	if h.path == "" {
		return fail(fmt.Errorf("set: no znode known for this token (%w)", ErrRefused))
	}
	return zkResult("set "+h.path, zkDo(ctx, func() error { _, err := l.conn.Set(h.path, nil, -1); return err }))
}

func (l *zkLock) Release(ctx context.Context, key, token string) Result {
	l.mu.Lock()
	h, known := l.holds[token]
	delete(l.holds, token)
	l.mu.Unlock()
	if !known {
		return fail(fmt.Errorf("release: no znode for this token (%w)", ErrRefused))
	}
	var kids []string
	if err := zkDo(ctx, func() (err error) { kids, _, err = l.conn.Children(h.dir); return err }); err != nil {
		l.orphan(h.dir, token)
		return zkResult("children "+h.dir, err)
	}
	slices.SortFunc(kids, func(a, b string) int { return strings.Compare(zkSeq(a), zkSeq(b)) })
	mine := path.Base(h.path)
	if h.path == "" { // the create's answer was lost: find the znode by its token
		if i := slices.IndexFunc(kids, func(k string) bool { return strings.HasPrefix(k, token+"-lock-") }); i >= 0 {
			mine = kids[i]
		} else {
			l.orphan(h.dir, token) // the create may still land
			return fail(fmt.Errorf("release: no znode of this token under %s (%w)", h.dir, ErrNotHeld))
		}
	}
	// After an acquire whose outcome was lost the znode may be a waiter's,
	// behind the holder's: deleting it frees nothing, so that release must
	// not say ok. (A waiter whose predecessors all go between the list and
	// the delete held for that moment only; it is reported not held.)
	held := len(kids) > 0 && kids[0] == mine
	err := zkDo(ctx, func() error { return l.conn.Delete(h.dir+"/"+mine, -1) })
	switch {
	case err != nil:
		r := zkResult("delete "+mine, err)
		if r.Outcome == history.Info {
			l.orphan(h.dir, token)
		}
		return r
	case !held:
		return fail(fmt.Errorf("delete %s: it was a waiter's znode, %s held the lock (%w)", mine, strings.Join(kids[:min(1, len(kids))], ""), ErrNotHeld))
	}
	return ok()
}

// checkZooKeeper is the recipe's capability check: a session is set up and
// the root answers.
func checkZooKeeper(ctx context.Context, cfg Config) (Caps, error) {
	caps := Caps{Product: "ZooKeeper"}
	conn, _, err := zk.Connect(cfg.Service.Addrs, 5*time.Second, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		return caps, fmt.Errorf("connect to ZooKeeper: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := zkDo(ctx, func() error { _, _, err := conn.Exists("/"); return err }); err != nil {
		return caps, fmt.Errorf("ZooKeeper %s: %w", strings.Join(cfg.Service.Addrs, ","), err)
	}
	caps.Version = fmt.Sprintf("ensemble (%d members)", len(cfg.Service.Addrs))
	return caps, nil
}

func (c *Config) validateZooKeeper() error {
	switch {
	case c.Service.Protocol != endpoint.ZooKeeper || len(c.Service.Addrs) == 0:
		return fmt.Errorf("recipe %s: no ZooKeeper endpoints (--topology zookeeper starts the members)", c.Recipe)
	case c.Wait.On() || c.WaitAOF.On():
		return fmt.Errorf("recipe %s cannot WAIT or WAITAOF: ZooKeeper commits every write on a quorum before it answers", c.Recipe)
	}
	return nil
}

func init() { registerRecipes(zkLockRecipe) }
