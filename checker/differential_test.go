package checker

import (
	"container/heap"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/history"
)

// The differential property: a simulated correct lease server (SET NX PX,
// SET IFEQ PX, DELIFEQ, exact expiry in true time) produces histories neither
// tier may alarm on, and the same server with one injected fault produces
// histories both tiers must flag, the direct tier with a witness naming the
// faulty operation and the grant it wronged.
//
// The clients are adversarial within the protocol: random TTLs per acquire
// and per extend (an extend may shorten the lease), tokens re-used across
// acquisitions (as Redisson's uuid:threadId is), unknown outcomes on every
// kind of operation (applied or not, possibly after the client gave up),
// latencies up to the TTL, a renew lane overlapping the main lane, and
// releases still in flight when the history ends.

const (
	faultNone             = ""
	faultLostGrant        = "lost-grant"         // the server forgets the holder and grants again
	faultEarlyExpiry      = "early-expiry"       // the holder's lease ends early; the next acquire wins
	faultNonHolderRelease = "non-holder-release" // a plain DEL by a client that does not hold
	faultNonHolderExtend  = "non-holder-extend"  // a plain PEXPIRE by a client that does not hold
)

var leaseFaults = []string{faultLostGrant, faultEarlyExpiry, faultNonHolderRelease, faultNonHolderExtend}

type leaseCfg struct {
	Seed    int64
	Clients int
	Keys    int
	MinTTL  int64 // ms
	MaxTTL  int64 // ms
	PInfo   float64
	PReuse  float64 // an acquisition re-uses one of the client's earlier tokens
	PSlow   float64 // one way of an operation takes up to the TTL
	Until   int64   // ns of simulated time; then every holder releases and the history ends
	Fault   string
}

type lsKey struct {
	name   string
	holder string
	expiry int64
}

type lsClient struct {
	id      int
	infos   [2]int
	tokens  []string
	token   string
	key     *lsKey
	holding bool
	hold    int // generation of the current hold; a renew loop of an older one stops
	blocked int64
	idle    bool // main lane free and not holding
	busy    [2]bool
	// cleanup: after an unknown acquire the client releases the token it
	// may hold.
	cleanup bool
	grant   *lsOp
}

// lsOp is what the simulator remembers of one of its operations, to know when
// the checker's certain interval covers an injection.
type lsOp struct {
	f, token   string
	call, ret  int64 // ret: -1 in flight, never for unknown
	ttl        int64 // ns
	ok         bool
	invokeIdx  int
	definitive bool
}

type leaseSim struct {
	cfg     leaseCfg
	rng     *rand.Rand
	now     int64
	seq     int64
	q       simQueue
	events  []history.Event
	keys    []*lsKey
	clients []*lsClient
	ended   bool
	// poisoned tokens had an unknown outcome: the op may still take effect,
	// so no tier can be certain of their leases.
	poisoned map[string]bool
	tokOps   map[string][]*lsOp

	injectAt    int64
	injected    bool
	faultInvoke int // event index of the injected operation's invoke
	victimGrant int // event index of the wronged grant's invoke
}

func simulateLeases(cfg leaseCfg) *leaseSim {
	s := &leaseSim{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), now: simStart, poisoned: map[string]bool{},
		tokOps: map[string][]*lsOp{}, faultInvoke: -1, victimGrant: -1}
	for k := 0; k < cfg.Keys; k++ {
		s.keys = append(s.keys, &lsKey{name: fmt.Sprintf("lock:{job-%d}", k)})
	}
	for c := 0; c < cfg.Clients; c++ {
		cl := &lsClient{id: c}
		s.clients = append(s.clients, cl)
		s.at(s.now+s.ms(0, 5), func() { s.acquire(cl) })
	}
	if cfg.Fault != faultNone {
		s.injectAt = simStart + cfg.Until/4 + s.rng.Int63n(cfg.Until/2)
		s.at(s.injectAt, s.tryInject)
	}
	s.at(simStart+cfg.Until, s.end)
	for s.q.Len() > 0 {
		it := heap.Pop(&s.q).(simItem)
		s.now = it.At
		it.Fn()
	}
	for i := range s.events {
		s.events[i].Index = int64(i)
	}
	return s
}

func (s *leaseSim) at(t int64, fn func()) {
	s.seq++
	heap.Push(&s.q, simItem{At: t, Seq: s.seq, Fn: fn})
}

// ms draws a time in [lo, hi] milliseconds at microsecond resolution.
func (s *leaseSim) ms(lo, hi int64) int64 { return lo*1e6 + s.rng.Int63n((hi-lo)*1000+1)*1000 }

func (s *leaseSim) ttl() int64 { return s.cfg.MinTTL + s.rng.Int63n(s.cfg.MaxTTL-s.cfg.MinTTL+1) }

// latency of one way: mostly fast, sometimes up to the lease.
func (s *leaseSim) latency(ttlMs int64) int64 {
	if s.rng.Float64() < s.cfg.PSlow {
		return s.ms(0, max(1, ttlMs))
	}
	return s.ms(0, 2)
}

func (s *leaseSim) pid(c *lsClient, lane int) history.Process {
	return history.Process(c.id + (2*c.infos[lane]+lane)*s.cfg.Clients)
}

func (s *leaseSim) emit(e history.Event) int {
	if s.ended {
		return -1 // the history ended; what was in flight stays so
	}
	e.Time = s.now
	s.events = append(s.events, e)
	return len(s.events) - 1
}

// op sends one operation. apply runs at the server and returns the outcome;
// done runs at the client with ok/fail/info. fast forces a quick, definite
// round trip (for injected operations).
func (s *leaseSim) op(c *lsClient, lane int, inv history.Event, fast bool, apply func() bool, done func(history.Type)) *lsOp {
	if c.busy[lane] {
		panic(fmt.Sprintf("client %d lane %d busy", c.id, lane))
	}
	c.busy[lane] = true
	p := s.pid(c, lane)
	inv.Process, inv.Client, inv.Type = p, c.id, history.Invoke
	o := &lsOp{f: inv.F, token: inv.Token, call: s.now, ret: -1, ttl: inv.TTLMs * 1e6}
	o.invokeIdx = s.emit(inv)
	s.tokOps[inv.Token] = append(s.tokOps[inv.Token], o)
	ttlMs := max(inv.TTLMs, s.cfg.MinTTL)
	d1, d2 := s.latency(ttlMs), s.latency(ttlMs)
	if fast {
		d1, d2 = s.ms(0, 1), s.ms(0, 1)
	}
	unknown := !fast && s.rng.Float64() < s.cfg.PInfo
	if unknown {
		s.poisoned[inv.Token] = true
		o.ret = never
		applied := s.rng.Intn(3) != 0
		if applied {
			// Possibly after the client has given up on it.
			s.at(s.now+d1+s.latency(ttlMs), func() { apply() })
		}
		s.at(s.now+s.ms(1, ttlMs), func() {
			comp := inv
			comp.Type, comp.Error, comp.Fence = history.Info, "timeout", 0
			s.emit(comp)
			c.infos[lane]++
			c.busy[lane] = false
			done(history.Info)
		})
		return o
	}
	var okay bool
	s.at(s.now+d1, func() { okay = apply() })
	s.at(s.now+d1+d2, func() {
		comp := inv
		comp.Type = history.Fail
		if okay {
			comp.Type = history.OK
		} else {
			comp.Error = "not held"
		}
		o.ret, o.ok, o.definitive = s.now, okay, true
		s.emit(comp)
		c.busy[lane] = false
		if okay {
			done(history.OK)
		} else {
			done(history.Fail)
		}
	})
	return o
}

func (s *leaseSim) free(k *lsKey) bool { return k.holder == "" || s.now >= k.expiry }

func (s *leaseSim) later(c *lsClient, d int64, fn func()) {
	if s.ended {
		return
	}
	s.at(max(s.now+d, c.blocked), func() {
		if c.blocked > s.now {
			s.later(c, 0, fn)
			return
		}
		fn()
	})
}

func (s *leaseSim) pickToken(c *lsClient) string {
	if len(c.tokens) > 0 && s.rng.Float64() < s.cfg.PReuse {
		return c.tokens[s.rng.Intn(len(c.tokens))]
	}
	t := fmt.Sprintf("c%d-%d", c.id, len(c.tokens))
	c.tokens = append(c.tokens, t)
	return t
}

func (s *leaseSim) acquire(c *lsClient) {
	c.idle = false
	k := s.keys[s.rng.Intn(len(s.keys))]
	tok := s.pickToken(c)
	ttl := s.ttl()
	var o *lsOp
	o = s.op(c, 0, history.Event{F: history.FAcquire, Key: k.name, Token: tok, TTLMs: ttl}, false, func() bool {
		if !s.free(k) {
			return false
		}
		k.holder, k.expiry = tok, s.now+ttl*1e6
		return true
	}, func(t history.Type) {
		switch t {
		case history.OK:
			c.token, c.key, c.holding, c.grant = tok, k, true, o
			c.hold++
			gen := c.hold
			s.later(c, o.ttl/3, func() { s.renew(c, gen) })
			s.later(c, s.ms(0, 2*ttl), func() { s.release(c) })
		case history.Info:
			if s.rng.Intn(2) == 0 {
				c.token, c.key, c.cleanup = tok, k, true
				s.later(c, s.ms(0, 5), func() { s.release(c) })
				return
			}
			s.rest(c)
		default:
			s.rest(c)
		}
	})
}

func (s *leaseSim) rest(c *lsClient) {
	c.idle = true
	s.later(c, s.ms(1, 20), func() {
		if c.idle {
			s.acquire(c)
		}
	})
}

func (s *leaseSim) renew(c *lsClient, gen int) {
	if !c.holding || c.hold != gen {
		return
	}
	if c.busy[1] {
		s.later(c, s.ms(1, 2), func() { s.renew(c, gen) })
		return
	}
	k, tok, ttl := c.key, c.token, s.ttl()
	var o *lsOp
	o = s.op(c, 1, history.Event{F: history.FExtend, Key: k.name, Token: tok, TTLMs: ttl}, false, func() bool {
		if k.holder != tok || s.free(k) {
			return false
		}
		k.expiry = s.now + ttl*1e6
		return true
	}, func(t history.Type) {
		if t == history.Fail {
			return
		}
		s.later(c, o.ttl/3, func() { s.renew(c, gen) })
	})
}

func (s *leaseSim) release(c *lsClient) {
	if !c.holding && !c.cleanup {
		return // already released, e.g. when the history ended
	}
	k, tok := c.key, c.token
	c.holding, c.cleanup = false, false
	s.op(c, 0, history.Event{F: history.FRelease, Key: k.name, Token: tok}, false, func() bool {
		if k.holder != tok || s.free(k) {
			return false
		}
		k.holder = ""
		return true
	}, func(history.Type) { s.rest(c) })
}

// end releases every holder's lock at once and closes the history shortly
// after, so that some releases are still in flight.
func (s *leaseSim) end() {
	for _, c := range s.clients {
		if c.holding {
			c.blocked = 0
			s.release(c)
		}
	}
	s.at(s.now+s.ms(0, 2), func() { s.ended = true })
}

// certainEnd is the end of the victim's certain interval as the simulator
// knows it, or 0 when it cannot be sure the checker sees it: the reference is
// its latest successful grant or extend; every other op of the hold must have
// returned before that reference was sent, none may be in flight, and the
// token must never have had an unknown outcome.
func (s *leaseSim) certainEnd(c *lsClient) int64 {
	if !c.holding || s.poisoned[c.token] {
		return 0
	}
	ops := s.tokOps[c.token]
	var ref *lsOp
	for _, o := range ops {
		if o.ret == -1 {
			return 0
		}
		if o.ok && o.f != history.FRelease && (ref == nil || o.call >= ref.call) {
			ref = o
		}
	}
	for _, o := range ops {
		if o != ref && o.definitive && o.ok && o.ret >= ref.call {
			return 0
		}
	}
	if ref != c.grant && ref.call <= c.grant.ret {
		return 0
	}
	return ref.call + ref.ttl - int64(DefaultEpsilon)
}

func (s *leaseSim) tryInject() {
	if s.injected || s.ended {
		return
	}
	margin := int64(10e6)
	var victim, actor *lsClient
	for _, c := range s.clients {
		if e := s.certainEnd(c); e > s.now+margin && victim == nil {
			victim = c
		}
	}
	for _, c := range s.clients {
		if c.idle && !c.busy[0] && !c.busy[1] && victim != nil && c != victim {
			actor = c
			break
		}
	}
	if victim == nil || actor == nil {
		s.at(s.now+s.ms(1, 3), s.tryInject)
		return
	}
	s.injected = true
	s.victimGrant = s.certainGrantIdx(victim)
	victim.blocked = s.now + 3e6 // no release or extend until the fault's reply is in
	actor.idle = false
	actor.blocked = 0
	k := victim.key
	switch s.cfg.Fault {
	case faultLostGrant, faultEarlyExpiry:
		tok := s.pickToken(actor)
		if tok == victim.token {
			tok = fmt.Sprintf("c%d-x", actor.id)
		}
		ttl := s.ttl()
		if s.cfg.Fault == faultEarlyExpiry {
			k.expiry = s.now
		}
		o := s.op(actor, 0, history.Event{F: history.FAcquire, Key: k.name, Token: tok, TTLMs: ttl}, true, func() bool {
			k.holder, k.expiry = tok, s.now+ttl*1e6 // SET without NX: a forgetful server
			return true
		}, func(history.Type) {
			actor.token, actor.key, actor.holding = tok, k, true
			actor.hold++
			actor.grant = nil
			s.later(actor, s.ms(0, ttl), func() { s.release(actor) })
		})
		s.faultInvoke = o.invokeIdx
	case faultNonHolderRelease:
		tok := s.pickToken(actor)
		o := s.op(actor, 0, history.Event{F: history.FRelease, Key: k.name, Token: tok}, true, func() bool {
			k.holder = "" // a plain DEL
			return true
		}, func(history.Type) { s.rest(actor) })
		s.faultInvoke = o.invokeIdx
	case faultNonHolderExtend:
		tok := s.pickToken(actor)
		ttl := s.ttl()
		o := s.op(actor, 1, history.Event{F: history.FExtend, Key: k.name, Token: tok, TTLMs: ttl}, true, func() bool {
			k.expiry = s.now + ttl*1e6 // a plain PEXPIRE
			return true
		}, func(history.Type) { s.rest(actor) })
		s.faultInvoke = o.invokeIdx
	}
}

func (s *leaseSim) certainGrantIdx(c *lsClient) int { return c.grant.invokeIdx }

// porcupineVerdicts runs the second tier alone on every key, segment by
// segment as Check does, and returns the keys it finds illegal.
func porcupineVerdicts(t testing.TB, events []history.Event, eps int64, chunk int) []string {
	t.Helper()
	ops, _, err := splitHistory(events)
	if err != nil {
		t.Fatal(err)
	}
	byK, keys := byKey(ops, isLockOp)
	var bad []string
	for _, k := range keys {
		var live []*Op
		for _, o := range byK[k] {
			if o.Outcome != history.Fail {
				live = append(live, o)
			}
		}
		for _, seg := range lockSegments(live, chunk) {
			switch porcupine.CheckOperationsTimeout(modelFrom(seg.init, simStart), toOperations(seg.ops, eps), 5*time.Second) {
			case porcupine.Illegal:
				bad = append(bad, k)
			case porcupine.Unknown:
				bad = append(bad, k+" (unknown: out of time)")
			default:
				continue
			}
			break
		}
	}
	return bad
}

func leaseConfig(seed int64, fault string) leaseCfg {
	r := rand.New(rand.NewSource(seed * 7919))
	minTTL := 20 + r.Int63n(40)
	return leaseCfg{Seed: seed, Clients: 2 + r.Intn(5), Keys: 1 + r.Intn(2), MinTTL: minTTL,
		MaxTTL: minTTL + 10 + r.Int63n(300), PInfo: 0.02 + r.Float64()*0.08, PReuse: r.Float64() * 0.7,
		PSlow: r.Float64() * 0.3, Until: int64(300+r.Intn(900)) * 1e6, Fault: fault}
}

// checkDifferential runs both tiers on one simulated history and reports what
// is wrong, or "" when the property holds.
func checkDifferential(t testing.TB, cfg leaseCfg) string {
	s := simulateLeases(cfg)
	eps := int64(DefaultEpsilon)
	var ws []witness
	ops, _, err := splitHistory(s.events)
	if err != nil {
		return fmt.Sprintf("simulator wrote a malformed history: %v", err)
	}
	byK, keys := byKey(ops, isLockOp)
	for _, k := range keys {
		ws = append(ws, findWitnesses(byK[k], eps)...)
	}
	// Past a violation porcupine explores every placement of the unknown
	// operations; a prefix ending at the fault's reply, cut at every point
	// where the key is certainly free, decides as much in far less time.
	events, chunk := s.events, Options{}.Defaults().ChunkOps
	if cfg.Fault != faultNone && s.injected {
		for i := s.faultInvoke + 1; i < len(events); i++ {
			if events[i].Process == events[s.faultInvoke].Process {
				events, chunk = events[:i+1], 1
				break
			}
		}
	}
	bad := porcupineVerdicts(t, events, eps, chunk)
	if cfg.Fault == faultNone {
		if len(ws) > 0 || len(bad) > 0 {
			return fmt.Sprintf("legal history flagged: %d witnesses (first %s), porcupine illegal on %v", len(ws), describeW(ws), bad)
		}
		return ""
	}
	if !s.injected {
		return "skip"
	}
	if len(bad) != 1 || bad[0] != events[s.faultInvoke].Key {
		return fmt.Sprintf("%s on %s: porcupine found %v illegal", cfg.Fault, events[s.faultInvoke].Key, bad)
	}
	for _, w := range ws {
		if int(w.op.InvokeIndex) == s.faultInvoke && int(w.holder.grant.InvokeIndex) == s.victimGrant {
			return ""
		}
	}
	return fmt.Sprintf("%s (invoke %d against grant %d) has no direct witness naming it; witnesses: %s",
		cfg.Fault, s.faultInvoke, s.victimGrant, describeW(ws))
}

func describeW(ws []witness) string {
	if len(ws) == 0 {
		return "none"
	}
	w := ws[0]
	return fmt.Sprintf("%s op %d against grant %d (%d in all)", w.kind, w.op.InvokeIndex, w.holder.grant.InvokeIndex, len(ws))
}

func TestDifferentialLegalHistories(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		if msg := checkDifferential(t, leaseConfig(seed, faultNone)); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

func TestDifferentialInjectedFaults(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 20
	}
	for _, fault := range leaseFaults {
		injected := 0
		for seed := int64(1); seed <= int64(n); seed++ {
			msg := checkDifferential(t, leaseConfig(seed, fault))
			switch msg {
			case "":
				injected++
			case "skip":
			default:
				t.Fatalf("%s seed %d: %s", fault, seed, msg)
			}
		}
		if injected < n/2 {
			t.Errorf("%s: injected in only %d of %d histories", fault, injected, n)
		}
	}
}

// FuzzDifferential explores further seeds: go test ./checker -fuzz FuzzDifferential
func FuzzDifferential(f *testing.F) {
	for i := int64(0); i < 8; i++ {
		f.Add(i, uint8(i%5))
	}
	f.Fuzz(func(t *testing.T, seed int64, fault uint8) {
		kind := faultNone
		if i := int(fault % 5); i > 0 {
			kind = leaseFaults[i-1]
		}
		if msg := checkDifferential(t, leaseConfig(seed, kind)); msg != "" && msg != "skip" {
			t.Fatalf("seed %d fault %q: %s", seed, kind, msg)
		}
	})
}
