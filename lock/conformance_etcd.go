package lock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// What client-test reads behind an exec program's back on etcd, by the
// convention docs/protocol.md states: key K's lock is one etcd key whose
// name ends with K (python-etcd3's Lock names it /locks/K), holding the
// grant's token as its value, on a lease whose TTL is the grant's; a fence,
// if returned, is that key's create revision.
type etcdServer struct{ cli *clientv3.Client }

func newEtcdServer(cfg Config) (*etcdServer, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Service.Addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd: %w", err)
	}
	return &etcdServer{cli: cli}, nil
}

func (e *etcdServer) close() { _ = e.cli.Close() }

// lease: what a case asks; etcd fixes a lease's TTL at its grant, so an
// extend renews it to that TTL (extendSetsTTL is false).
func (e *etcdServer) lease(_ *suite, d time.Duration) time.Duration { return d }

func (e *etcdServer) extendSetsTTL() bool { return false }

func (e *etcdServer) says(string) (string, string) {
	return "the key holds the grant's token on a lease of its TTL", "the lease renewed and the key stays"
}

func (e *etcdServer) cases(t *suite) []tcase {
	cs := []tcase{{"lease expiry", func() string { return e.leaseExpiry(t) }}}
	if t.opt.ChangeLeader != nil {
		cs = append(cs, tcase{"the leader killed mid-grant", func() string { return leaderChange(t) }})
	}
	return cs
}

// entry is the etcd key of the lock of key, or nil when there is none.
func (e *etcdServer) entry(t *suite, key string) (*etcdEntry, error) {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	resp, err := e.cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var found []*etcdEntry
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), key) {
			found = append(found, &etcdEntry{name: string(kv.Key), value: string(kv.Value), lease: clientv3.LeaseID(kv.Lease), created: kv.CreateRevision})
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, e := range found {
		names[i] = e.name
	}
	return nil, fmt.Errorf("%d etcd keys end with %s (%s): the convention is one", len(found), key, strings.Join(names, ", "))
}

type etcdEntry struct {
	name, value string
	lease       clientv3.LeaseID
	created     int64
}

func (e *etcdServer) holds(t *suite, key, tok string) { e.holder(t, key, tok) }

// holder checks that key's lock holds the program's token for tok and returns it.
func (e *etcdServer) holder(t *suite, key, tok string) *etcdEntry {
	want := t.l.progToken(tok)
	k, err := e.entry(t, key)
	switch {
	case err != nil:
		panic(caseErr{fmt.Sprintf("read %s's lock from etcd: %v", key, err)})
	case k == nil:
		panic(caseErr{fmt.Sprintf("no etcd key ends with %s: the lock is not held", key)})
	case k.value != want:
		panic(caseErr{fmt.Sprintf("%s holds %q, not the grant's token %q (an ok acquire that stored another value must return it as \"token\")", k.name, k.value, want)})
	}
	return k
}

func (e *etcdServer) absent(t *suite, key, why string) {
	k, err := e.entry(t, key)
	if err != nil {
		panic(caseErr{fmt.Sprintf("read %s's lock from etcd: %v", key, err)})
	}
	if k != nil {
		panic(caseErr{fmt.Sprintf("%s still exists: %s", k.name, why)})
	}
}

// ttls is what is left of the lease of key's lock (etcd counts whole
// seconds), nil when the key is gone.
func (e *etcdServer) ttls(t *suite, key string) []time.Duration {
	k, err := e.entry(t, key)
	if err != nil {
		panic(caseErr{fmt.Sprintf("read %s's lock from etcd: %v", key, err)})
	}
	if k == nil {
		return nil
	}
	if k.lease == clientv3.NoLease {
		panic(caseErr{fmt.Sprintf("%s has no lease: it would outlive its holder", k.name)})
	}
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	ttl, err := e.cli.TimeToLive(ctx, k.lease)
	if err != nil {
		panic(caseErr{fmt.Sprintf("the lease of %s: %v", k.name, err)})
	}
	return []time.Duration{time.Duration(ttl.TTL) * time.Second}
}

func (e *etcdServer) drop(t *suite, key string) {
	if k, err := e.entry(t, key); err == nil && k != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
		defer cancel()
		_, _ = e.cli.Delete(ctx, k.name)
	}
}

// fence checks that a returned fence is the lock key's create revision.
func (e *etcdServer) fence(t *suite, key, tok string, fence int64) {
	k := e.holder(t, key, tok)
	if fence > 0 && fence != k.created {
		panic(caseErr{fmt.Sprintf("fence %d is not %s's create revision %d: on etcd the fence is the lock key's create revision (docs/protocol.md)", fence, k.name, k.created)})
	}
}

// leaseExpiry: a grant whose lease ran out is gone (etcd deleted the key
// with its lease), cannot be extended back, and its release does not free
// the next holder's lock. The lease is asked for 1 s; etcd may round it up
// to its minimum, so the case waits up to 8 s for the key to go.
func (e *etcdServer) leaseExpiry(t *suite) string {
	k, c, d := t.key(), NewToken(), NewToken()
	defer t.drop(k)
	t.acquire("acquire with TTL 1 s", k, c, time.Second, history.OK)
	start := time.Now()
	for {
		if got, err := e.entry(t, k); err == nil && got == nil {
			break
		}
		if time.Since(start) > 8*time.Second {
			panic(caseErr{fmt.Sprintf("%s's lock still exists 8 s after a 1 s grant: is it on a lease?", k)})
		}
		time.Sleep(200 * time.Millisecond)
	}
	gone := time.Since(start).Round(100 * time.Millisecond)
	t.extend("extend of the expired grant", k, c, 5*time.Second, history.Fail)
	t.absent(k, "an extend must not bring an expired lock back")
	t.acquire("acquire after expiry", k, d, 5*time.Second, history.OK)
	t.release("release of the expired grant", k, c, history.Fail)
	t.holds(k, d)
	t.release("release", k, d, history.OK)
	return fmt.Sprintf("the key went with its lease %v after the grant", gone)
}

// leaderChange kills the etcd leader while the program holds a lock: the
// program's extend must come back ok within 10 s (attempts that end
// unknown, or fail without not_held, while the members elect are retried)
// and none may say not_held, since the lease lives on the new leader; the
// key still holds the token, and the release frees it.
func leaderChange(t *suite) string {
	k, a := t.fresh(10 * time.Second)
	defer t.drop(k)
	restore, leader, err := t.opt.ChangeLeader()
	if err != nil {
		panic(caseErr{fmt.Sprintf("kill the leader: %v", err)})
	}
	defer func() { _ = restore() }()
	start, tries := time.Now(), 0
	for {
		tries++
		ctx, cancel := context.WithTimeout(t.ctx, t.opTimeout)
		r := t.l.Extend(ctx, k, a, 10*time.Second)
		cancel()
		if r.Ok() {
			break
		}
		if NotHeld(r) {
			panic(caseErr{fmt.Sprintf("extend %d after the leader's kill said not_held (%v): the lease lives on the new leader", tries, r.Err)})
		}
		if time.Since(start) > 10*time.Second {
			panic(caseErr{fmt.Sprintf("no ok extend within 10 s of the leader's kill (%d tries, the last %s: %v)", tries, r.Outcome, r.Err)})
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	t.holds(k, a)
	t.release("release after the leader change", k, a, history.OK)
	t.absent(k, "the release must delete the key")
	return fmt.Sprintf("%s killed: extended ok after %v (%d tries)", leader, took, tries)
}
