package lock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
)

// What client-test reads behind an exec program's back on Valkey: key K's
// value (the grant's token) and its PTTL, on the one server a Sentinel
// names, the standalone primary, the cluster client's node for K, or on
// each of Redlock's N primaries, where a key is held when a majority of the
// nodes hold it.
type valkeyServer struct {
	raws []valkey.Client // one, or Redlock's N nodes
}

func newValkeyServer(cfg Config) (*valkeyServer, error) {
	// Redlock's N primaries are read one by one; elsewhere one client
	// (Sentinel's primary, one server, or the cluster client) is enough.
	one := []Config{cfg}
	if cfg.Service.Protocol.Independent() {
		one = one[:0]
		for _, a := range cfg.Service.Addrs {
			one = append(one, Config{Recipe: cfg.Recipe, Service: cfg.Service.Node(a)})
		}
	}
	v := &valkeyServer{}
	for _, c := range one {
		raw, err := Connect(c)
		if err != nil {
			v.close()
			return nil, err
		}
		v.raws = append(v.raws, raw)
	}
	return v, nil
}

func (v *valkeyServer) close() {
	for _, raw := range v.raws {
		raw.Close()
	}
}

func (v *valkeyServer) holds(t *suite, key, tok string) {
	want := t.l.progToken(tok)
	var seen []string
	holders := 0
	for _, raw := range v.raws {
		got, err := raw.Do(t.ctx, raw.B().Get().Key(key).Build()).ToString()
		switch {
		case valkey.IsValkeyNil(err):
			seen = append(seen, "none")
		case err != nil:
			panic(caseErr{fmt.Sprintf("GET %s: %v", key, err)})
		case got != want:
			seen = append(seen, fmt.Sprintf("%q", got))
		default:
			holders++
		}
	}
	switch {
	case holders >= v.majority():
	case len(v.raws) > 1:
		panic(caseErr{fmt.Sprintf("%s holds the grant's token %q on %d of %d nodes, not a majority (the others: %s)",
			key, want, holders, len(v.raws), strings.Join(seen, ", "))})
	case seen[0] == "none":
		panic(caseErr{fmt.Sprintf("the server has no %s: the lock is not held", key)})
	default:
		panic(caseErr{fmt.Sprintf("%s holds %s, not the grant's token %q (an ok acquire that stored another value must return it as \"token\")", key, seen[0], want)})
	}
}

// majority is how many of the nodes must hold a key for the lock to be held.
func (v *valkeyServer) majority() int { return len(v.raws)/2 + 1 }

func (v *valkeyServer) absent(t *suite, key, why string) {
	for i, raw := range v.raws {
		n, err := raw.Do(t.ctx, raw.B().Exists().Key(key).Build()).AsInt64()
		if err != nil {
			panic(caseErr{fmt.Sprintf("EXISTS %s: %v", key, err)})
		}
		if n != 0 {
			panic(caseErr{fmt.Sprintf("%s still exists%s: %s", key, v.onNode(i), why)})
		}
	}
}

// onNode names node i where there are several.
func (v *valkeyServer) onNode(i int) string {
	if len(v.raws) == 1 {
		return ""
	}
	return fmt.Sprintf(" on node %d of %d", i+1, len(v.raws))
}

// ttls is the key's PTTL on every node that has it.
func (v *valkeyServer) ttls(t *suite, key string) []time.Duration {
	var out []time.Duration
	for _, raw := range v.raws {
		p, err := raw.Do(t.ctx, raw.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			panic(caseErr{fmt.Sprintf("PTTL %s: %v", key, err)})
		}
		if p != -2 || len(v.raws) == 1 {
			out = append(out, time.Duration(p)*time.Millisecond)
		}
	}
	return out
}

func (v *valkeyServer) drop(t *suite, key string) {
	for _, raw := range v.raws {
		_ = raw.Do(context.WithoutCancel(t.ctx), raw.B().Del().Key(key).Build()).Error()
	}
}

// fence: any positive, increasing number will do on Valkey (the fences
// case checks that); its source is the program's to choose.
func (v *valkeyServer) fence(*suite, string, string, int64) {}

// lease: a key's TTL is what the acquire or extend asked.
func (v *valkeyServer) lease(_ *suite, d time.Duration) time.Duration { return d }

func (v *valkeyServer) extendSetsTTL() bool { return true }

func (v *valkeyServer) says(string) (string, string) {
	return "the key holds the grant's token with its TTL", ""
}

func (v *valkeyServer) cases(t *suite) []tcase {
	cs := []tcase{{"expiry", func() string { return expiry(t) }}}
	if len(v.raws) > 1 && t.opt.PauseNode != nil {
		cs = append(cs, tcase{"a minority of the nodes stopped", func() string { return v.minorityDown(t) }})
	}
	if len(v.raws) == 1 && t.cfg.Service.Protocol != endpoint.Cluster {
		cs = append(cs, tcase{"a release refused a connection, released again: the key ends free", func() string { return v.refusedRelease(t) }})
	}
	if t.opt.MoveSlot != nil {
		cs = append(cs, tcase{"the key's slot moved mid-grant (ASK, then MOVED)", func() string { return slotMoved(t) }})
	}
	return cs
}

// expiry: a grant whose TTL ran out is gone, cannot be extended back, and
// its release does not free the next holder's lock.
func expiry(t *suite) string {
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
func (v *valkeyServer) minorityDown(t *suite) string {
	down := len(v.raws) - v.majority()
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
	live := v.raws
	v.raws = v.raws[down:] // only the live nodes can be read
	defer func() { v.raws = live }()
	k, a := t.key(), NewToken()
	defer t.drop(k)
	t.acquire("acquire with a minority stopped", k, a, t.ttl(5*time.Second), history.OK)
	holders := v.countHolding(t, k, a)
	if holders < len(live)/2+1 {
		panic(caseErr{fmt.Sprintf("an ok acquire left the token on %d of the %d live nodes: %d of %d make a majority", holders, len(v.raws), len(live)/2+1, len(live))})
	}
	t.release("release with a minority stopped", k, a, history.OK)
	t.absent(k, "the release must free the live nodes")
	return fmt.Sprintf("%d of %d nodes stopped: granted and freed on the %d left", down, len(live), len(v.raws))
}

// slotMoved moves a held key's slot to another primary in the legacy way:
// while the move is open the key is already on the target and the source
// answers ASK, so the holder's extend and another token's acquire must
// follow ASK (ASKING on the target); once it closes the source answers
// MOVED, which the release must follow. A client that does not follow the
// redirects fails its operations; one that follows ASK as if it were MOVED
// still works here, at the cost of a slot-map reload.
func slotMoved(t *suite) string {
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

// refusedRelease: the server at its maxclients when a grant's release
// needs a new connection (the program's connections were closed, as after a
// failover or a restart), so the release is refused before its command
// runs; once the server takes connections again the application releases
// again with the same token, and that must free the key. A library that
// drops the grant's token before the release's round trip refuses it
// (redis-py's Lock before PR #4258: "Cannot release an unlocked lock"),
// and the lock stays taken until its TTL. "max number of clients reached"
// is what a connection storm gives every client of the server.
func (v *valkeyServer) refusedRelease(t *suite) string {
	raw := v.raws[0]
	ctx := context.WithoutCancel(t.ctx)
	limit, err := raw.Do(ctx, raw.B().ConfigGet().Parameter("maxclients").Build()).AsStrMap()
	if err != nil || limit["maxclients"] == "" {
		panic(caseErr{fmt.Sprintf("CONFIG GET maxclients: %v", err)})
	}
	restore := func() {
		_ = raw.Do(ctx, raw.B().ConfigSet().ParameterValue().ParameterValue("maxclients", limit["maxclients"]).Build()).Error()
	}
	defer restore()
	k, tok := t.fresh(5 * time.Second)
	defer t.drop(k)
	// maxclients 1: the connections open now stay (this one among them),
	// every new one is refused with an error and closed.
	for _, cmd := range []valkey.Completed{
		raw.B().ConfigSet().ParameterValue().ParameterValue("maxclients", "1").Build(),
		raw.B().ClientKill().TypeNormal().SkipmeYes().Build(),
	} {
		if err := raw.Do(ctx, cmd).Error(); err != nil {
			panic(caseErr{fmt.Sprintf("refuse new connections: %v", err)})
		}
	}
	r := t.expectNot("release while the server refuses connections", history.OK, func(ctx context.Context) Result {
		return t.l.Release(ctx, k, tok)
	})
	restore()
	if !t.heldBy(k, tok) {
		panic(caseErr{fmt.Sprintf("the release answered %s, yet the key no longer holds the token: the server took its command", r.Outcome)})
	}
	if !t.releaseAgain(k, tok, 0, "a release refused a connection", "redis-py's Lock before redis/redis-py PR #4258 drops the token so") {
		t.absent(k, "the second release must free the key")
	}
	return fmt.Sprintf("the first release ended %s with the key still held; the second freed it", r.Outcome)
}

// countHolding is how many nodes hold key with the program's token for tok.
func (v *valkeyServer) countHolding(t *suite, key, tok string) int {
	want, n := t.l.progToken(tok), 0
	for _, raw := range v.raws {
		if got, err := raw.Do(t.ctx, raw.B().Get().Key(key).Build()).ToString(); err == nil && got == want {
			n++
		}
	}
	return n
}
