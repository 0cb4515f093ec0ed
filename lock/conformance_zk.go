package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockjepsen/lockjepsen/history"
)

// What client-test reads behind an exec program's back on ZooKeeper: key
// K's lock znode (ZKLockPath), an ephemeral child of the program's session
// carrying the grant's token. The lease is the program's session (cfg.TTL),
// and two more cases run a second copy of the program (mutual exclusion
// between two sessions) and stop the program until its session expires
// (the lost grant must not be extended).
type zkServer struct{ conn *zk.Conn }

func newZKServer(cfg Config) (*zkServer, error) {
	conn, _, err := zk.Connect(cfg.Service.Addrs, 5*time.Second, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper: %w", err)
	}
	return &zkServer{conn: conn}, nil
}

func (z *zkServer) close() { z.conn.Close() }

func (z *zkServer) holds(t *suite, key, tok string) { z.holder(t, key, tok) }

func (z *zkServer) absent(t *suite, key, why string) {
	kids, err := z.kids(t, key)
	if err != nil {
		panic(caseErr{fmt.Sprintf("children of %s: %v", ZKLockPath(key), err)})
	}
	if len(kids) > 0 {
		panic(caseErr{fmt.Sprintf("%s still has %s: %s", ZKLockPath(key), strings.Join(kids, ", "), why)})
	}
}

// ttls: the lease is the session's, not the znode's.
func (z *zkServer) ttls(*suite, string) []time.Duration { return nil }

func (z *zkServer) drop(t *suite, key string) {
	dir := ZKLockPath(key)
	kids, _ := z.kids(t, key)
	for _, k := range kids {
		_ = z.do(t, func() error { return z.conn.Delete(dir+"/"+k, -1) })
	}
	_ = z.do(t, func() error { return z.conn.Delete(dir, -1) })
}

// lease: the session's timeout (cfg.TTL), fixed when the program
// connected, is all a program can promise, whatever a case asks.
func (z *zkServer) lease(t *suite, _ time.Duration) time.Duration { return t.cfg.TTL }

func (z *zkServer) extendSetsTTL() bool { return false }

func (z *zkServer) says(key string) (string, string) {
	return "an ephemeral znode of the program's session holds " + ZKLockPath(key) + " with the grant's token",
		"the session is alive and the znode stays"
}

func (z *zkServer) cases(t *suite) []tcase {
	return []tcase{
		{"session expiry", func() string { return z.sessionExpiry(t) }},
		{"two processes: mutual exclusion", func() string { return twoProcesses(t) }},
	}
}

// do runs one request of the suite's own ZooKeeper session, within 5 s.
func (z *zkServer) do(t *suite, call func() error) error {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	return zkDo(ctx, call)
}

// kids lists the znodes under key's lock path (none when it is absent).
// A sync first: the suite's session may read from another member than the
// program's, a follower that has not yet applied the program's last write
// (seen: a refused acquire's deleted znode still listed there).
func (z *zkServer) kids(t *suite, key string) ([]string, error) {
	var kids []string
	err := z.do(t, func() (err error) {
		if _, err = z.conn.Sync(ZKLockPath(key)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		kids, _, err = z.conn.Children(ZKLockPath(key))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// holder checks that key's lock path holds one znode, the grant's: an
// ephemeral one (a lost session frees it) carrying the program's token in its
// name or as its data, and nothing else: a refused or released acquire that
// left its znode behind would queue for the lock and take it later. It
// returns the znode's stat.
func (z *zkServer) holder(t *suite, key, tok string) *zk.Stat {
	dir, want := ZKLockPath(key), t.l.progToken(tok)
	kids, err := z.kids(t, key)
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
	if err := z.do(t, func() (err error) { data, st, err = z.conn.Get(dir + "/" + kids[0]); return err }); err != nil {
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

// fence checks the holder's znode and, when the acquire returned a fence,
// that it is that znode's czxid (docs/protocol.md): the history then names
// the fence's source (zk-czxid) truthfully.
func (z *zkServer) fence(t *suite, key, tok string, fence int64) {
	st := z.holder(t, key, tok)
	if fence > 0 && fence != st.Czxid {
		panic(caseErr{fmt.Sprintf("fence %d is not the holder znode's czxid %d: on ZooKeeper the fence is the lock znode's czxid (docs/protocol.md)", fence, st.Czxid)})
	}
}

// sessionExpiry stops the program (SIGSTOP: its heartbeats stop) until the
// ensemble expires its session and deletes the grant's znode, then resumes
// it: the grant is lost, and an extend or release of it must not say ok.
// kazoo's Lock, for one, still calls itself acquired then.
func (z *zkServer) sessionExpiry(t *suite) string {
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
		if kids, err := z.kids(t, k); err == nil && len(kids) == 0 {
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
