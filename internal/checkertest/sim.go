// Package checkertest generates histories the way a run would, for the tests
// and benchmarks of the packages that judge histories (checker, shrink): a
// correct lease server (exact expiry in true time, INCR fence per attempt)
// and a fenced resource in read-write mode. Clients acquire, extend, run
// critical sections, pause, lose replies (info), and release. Options add
// failovers (the server forgets holders and loses INCRs) and one injected
// double grant. It is a package of its own, not a test file of checker, so
// that more than one package's tests draw from the same generator.
package checkertest

import (
	"container/heap"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Config is what a simulation generates: how many clients on how many keys,
// for how long, and which faults.
type Config struct {
	Seed      int64
	Clients   int
	Keys      int
	Events    int   // stop starting operations past this many events
	TTLms     int64 // lease
	PInfo     float64
	PPause    float64 // per section: pause longer than the lease before writing
	Failovers int     // server forgets holders this many times, spread over the run
	FailEvery int64   // ns between failovers
	Inject    bool    // one double grant while the holder certainly holds
	Until     int64   // ns of simulated time after which no operation starts; 0: no limit
	// Unfenced: the resource takes every read and write (--fence none), so
	// a paused holder's stale write lands: a rewind when the holders after
	// it had counted on, a lost update when one of them had read the same.
	Unfenced bool
}

type simKey struct {
	name       string
	holder     string
	expiry     int64
	certainEnd int64 // call+ttl of the holder's last grant or extend
	holderCl   int
	fence      int64
	value      int64
	lastFence  int64
	lastToken  string
}

type simClient struct {
	id      int
	proc    history.Process
	token   string
	key     *simKey
	fence   int64
	holding bool
	blocked int64
}

// Item is one scheduled step of a simulation: Fn runs at At, ties broken by
// Seq (the order they were scheduled in).
type Item struct {
	At  int64
	Seq int64
	Fn  func()
}

// Queue is a heap of Items (container/heap), the simulations' clock.
type Queue []Item

func (q Queue) Len() int { return len(q) }
func (q Queue) Less(i, j int) bool {
	if q[i].At != q[j].At {
		return q[i].At < q[j].At
	}
	return q[i].Seq < q[j].Seq
}
func (q Queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *Queue) Push(x any)   { *q = append(*q, x.(Item)) }
func (q *Queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// Sim is a finished simulation: what it injected and what the resource went
// through, for tests that compare a verdict with the truth.
type Sim struct {
	cfg      Config
	rng      *rand.Rand
	now      int64
	seq      int64
	q        Queue
	events   []history.Event
	attempts []history.Attempt
	keys     []*simKey
	clients  []*simClient
	nextProc history.Process
	tokens   int
	Injected bool // the double grant Config.Inject asked for was given
	stopped  bool
	// What the resource really went through (Unfenced runs): accepted
	// writes that set the value below what it held, and to what it held.
	Rewinds, Repeats int
}

// Start is the simulated clock's first reading (ns): true time is positive.
const Start = int64(1_000_000_000)

// Simulate runs one simulation: the history's events (indexed in time
// order), the resource's log, and the simulation's account of itself.
func Simulate(cfg Config) ([]history.Event, []history.Attempt, *Sim) {
	s := &Sim{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), now: Start}
	for k := 0; k < cfg.Keys; k++ {
		s.keys = append(s.keys, &simKey{name: fmt.Sprintf("lock:{job-%d}", k), holderCl: -1})
	}
	for c := 0; c < cfg.Clients; c++ {
		cl := &simClient{id: c, proc: s.nextProc}
		s.nextProc++
		s.clients = append(s.clients, cl)
		s.at(s.now+s.us(0, 2000), func() { s.acquire(cl) })
	}
	for i := 1; i <= cfg.Failovers; i++ {
		s.at(Start+int64(i)*cfg.FailEvery, s.failover)
	}
	for s.q.Len() > 0 {
		it := heap.Pop(&s.q).(Item)
		s.now = it.At
		it.Fn()
	}
	for i := range s.events {
		s.events[i].Index = int64(i)
	}
	return s.events, s.attempts, s
}

// WriteRun writes a generated run's history.jsonl and resource.jsonl to dir,
// a folder `lockjepsen check` (and shrink) reads.
func WriteRun(dir string, events []history.Event, attempts []history.Attempt) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := history.WriteFile(filepath.Join(dir, runfolder.History), events); err != nil {
		return err
	}
	return history.WriteAttemptsFile(filepath.Join(dir, runfolder.Resource), attempts)
}

func (s *Sim) at(t int64, fn func()) {
	s.seq++
	heap.Push(&s.q, Item{t, s.seq, fn})
}

func (s *Sim) us(lo, hi int64) int64 { return (lo + s.rng.Int63n(hi-lo+1)) * 1000 }

func (s *Sim) emit(e history.Event) {
	e.Time = s.now
	s.events = append(s.events, e)
	if len(s.events) >= s.cfg.Events || (s.cfg.Until > 0 && s.now >= Start+s.cfg.Until) {
		s.stopped = true
	}
}

// next schedules the client's next action after think time, honouring a block.
func (s *Sim) next(c *simClient, delay int64, fn func(*simClient)) {
	if s.stopped {
		return
	}
	s.at(max(s.now+delay, c.blocked), func() { fn(c) })
}

// op runs one operation: the invoke now, the server's decision after a
// network delay, the reply after another; an unknown outcome loses the request
// or the reply and the client gives up after its timeout.
func (s *Sim) op(c *simClient, inv history.Event, forceOK bool, apply func() history.Event, done func(history.Event)) {
	inv.Process, inv.Client, inv.Type = c.proc, c.id, history.Invoke
	s.emit(inv)
	info := !forceOK && s.rng.Float64() < s.cfg.PInfo
	lostRequest := info && s.rng.Intn(2) == 0
	d1, d2 := s.us(50, 1000), s.us(50, 1000)
	var comp history.Event
	if !lostRequest {
		s.at(s.now+d1, func() { comp = apply() })
	}
	if info {
		s.at(s.now+50_000_000, func() {
			s.emit(history.Event{Process: c.proc, Client: c.id, Type: history.Info, F: inv.F, Key: inv.Key, Token: inv.Token, Error: "timeout"})
			c.proc = s.nextProc
			s.nextProc++
			done(history.Event{Type: history.Info})
		})
		return
	}
	s.at(s.now+d1+d2, func() {
		comp.Process, comp.Client, comp.F, comp.Key, comp.Token = c.proc, c.id, inv.F, inv.Key, inv.Token
		s.emit(comp)
		done(comp)
	})
}

func (s *Sim) acquire(c *simClient) {
	k := s.keys[s.rng.Intn(len(s.keys))]
	s.tokens++
	tok := fmt.Sprintf("t%06d", s.tokens)
	ttl := s.cfg.TTLms
	force := false
	inv := history.Event{F: history.FAcquire, Key: k.name, Token: tok, TTLMs: ttl}
	callAt := s.now
	if s.cfg.Inject && !s.Injected && len(s.events) > s.cfg.Events/3 && s.canInject(k) {
		force = true
		s.Injected = true
	}
	s.op(c, inv, force, func() history.Event {
		k.fence++ // INCR runs even when SET is refused
		fence := k.fence
		if force && !s.canInject(k) {
			force, s.Injected = false, false // the moment passed; inject later
		}
		if k.holder == "" || s.now >= k.expiry || force {
			if force {
				// The stale holder must still certainly hold when the reply
				// lands, so it may not release until then.
				s.clients[k.holderCl].blocked = s.now + 2_000_000
			}
			k.holder, k.expiry, k.certainEnd, k.holderCl = tok, s.now+ttl*1e6, callAt+ttl*1e6, c.id
			return history.Event{Type: history.OK, Key: k.name, Token: tok, Fence: fence}
		}
		return history.Event{Type: history.Fail, Key: k.name, Token: tok, Error: "held"}
	}, func(r history.Event) {
		switch r.Type {
		case history.OK:
			c.token, c.key, c.fence, c.holding = tok, k, r.Fence, true
			s.next(c, s.us(0, 500), func(c *simClient) { s.section(c, 1+s.rng.Intn(3)) })
		case history.Info:
			if s.rng.Intn(2) == 0 { // clean up a lock we may hold
				c.token, c.key = tok, k
				s.next(c, s.us(0, 500), s.release)
				return
			}
			s.next(c, s.us(1000, 10000), s.acquire)
		default:
			s.next(c, s.us(1000, 10000), s.acquire)
		}
	})
}

// canInject: the holder's grant has been answered, it has not started to
// release, and its lease has ample time left.
func (s *Sim) canInject(k *simKey) bool {
	if k.holder == "" || k.holderCl < 0 {
		return false
	}
	h := s.clients[k.holderCl]
	return h.holding && h.token == k.holder && s.now+50_000_000 < k.certainEnd
}

func (s *Sim) section(c *simClient, left int) {
	if left == 0 {
		s.release(c)
		return
	}
	if s.rng.Float64() < 0.3 {
		s.extend(c, left)
		return
	}
	k := c.key
	s.op(c, history.Event{F: history.FRead, Key: k.name, Token: c.token, Fence: c.fence}, false, func() history.Event {
		ok := s.fenceOK(k, c)
		s.attempt(k, c, history.FRead, k.value, ok)
		if !ok {
			return history.Event{Type: history.Fail, Verdict: history.Rejected}
		}
		return history.Event{Type: history.OK, Value: history.Int64(k.value), Verdict: history.Accepted}
	}, func(r history.Event) {
		if r.Type != history.OK {
			s.next(c, s.us(0, 200), s.release)
			return
		}
		v := *r.Value + 1
		pause := int64(0)
		if s.rng.Float64() < s.cfg.PPause {
			pause = s.cfg.TTLms * 1e6 * (5 + s.rng.Int63n(20)) / 10
		}
		s.next(c, s.us(0, 300)+pause, func(c *simClient) { s.write(c, v, left) })
	})
}

func (s *Sim) write(c *simClient, v int64, left int) {
	k := c.key
	s.op(c, history.Event{F: history.FWrite, Key: k.name, Token: c.token, Fence: c.fence, Value: history.Int64(v)}, false, func() history.Event {
		ok := s.fenceOK(k, c)
		s.attempt(k, c, history.FWrite, v, ok)
		if !ok {
			return history.Event{Type: history.Fail, Verdict: history.Rejected}
		}
		switch {
		case v < k.value:
			s.Rewinds++
		case v == k.value:
			s.Repeats++
		}
		k.value = v
		return history.Event{Type: history.OK, Verdict: history.Accepted}
	}, func(r history.Event) {
		if r.Type != history.OK {
			s.next(c, s.us(0, 200), s.release)
			return
		}
		s.next(c, s.us(0, 300), func(c *simClient) { s.section(c, left-1) })
	})
}

// fenceOK is read-write fencing: a greater fence, or the same fence from the
// same token; accepted reads raise last_fence too.
func (s *Sim) fenceOK(k *simKey, c *simClient) bool {
	if s.cfg.Unfenced || c.fence > k.lastFence || (c.fence == k.lastFence && c.token == k.lastToken) {
		k.lastFence, k.lastToken = c.fence, c.token
		return true
	}
	return false
}

func (s *Sim) attempt(k *simKey, c *simClient, op string, v int64, ok bool) {
	verdict := history.Accepted
	if !ok {
		verdict = history.Rejected
	}
	s.attempts = append(s.attempts, history.Attempt{Time: s.now, Op: op, RunID: k.name, Client: c.id, Process: int(c.proc),
		Token: c.token, Fence: c.fence, Value: v, Verdict: verdict, LastFence: k.lastFence, Mode: "read-write"})
}

func (s *Sim) extend(c *simClient, left int) {
	k := c.key
	ttl := s.cfg.TTLms
	callAt := s.now
	s.op(c, history.Event{F: history.FExtend, Key: k.name, Token: c.token, TTLMs: ttl}, false, func() history.Event {
		if k.holder == c.token && s.now < k.expiry {
			k.expiry, k.certainEnd = s.now+ttl*1e6, callAt+ttl*1e6
			return history.Event{Type: history.OK, Key: k.name, Token: c.token}
		}
		return history.Event{Type: history.Fail, Key: k.name, Token: c.token, Error: "not held"}
	}, func(r history.Event) {
		if r.Type != history.OK {
			s.next(c, s.us(0, 200), s.release)
			return
		}
		s.next(c, s.us(0, 300), func(c *simClient) { s.section(c, left) })
	})
}

func (s *Sim) release(c *simClient) {
	k, tok := c.key, c.token
	c.holding = false
	s.op(c, history.Event{F: history.FRelease, Key: k.name, Token: tok}, false, func() history.Event {
		if k.holder == tok && s.now < k.expiry {
			k.holder, k.holderCl = "", -1
			return history.Event{Type: history.OK, Key: k.name, Token: tok}
		}
		return history.Event{Type: history.Fail, Key: k.name, Token: tok, Error: "not held"}
	}, func(history.Event) {
		s.next(c, s.us(500, 5000), s.acquire)
	})
}

// failover: the replication link was cut, the primary dies, and the promoted
// replica never saw the recent grants nor the last INCRs.
func (s *Sim) failover() {
	if s.stopped {
		return
	}
	n := s.rng.Intn(1000)
	old, promoted := fmt.Sprintf("valkey-%d", n%3), fmt.Sprintf("valkey-%d", (n+1)%3)
	s.emit(history.Event{Process: history.Nemesis, Type: history.Info, F: "cut-replication", Node: old})
	s.at(s.now+200_000_000, func() {
		s.emit(history.Event{Process: history.Nemesis, Type: history.Info, F: "kill", Node: old})
		for _, k := range s.keys {
			k.holder, k.holderCl = "", -1
			k.fence -= s.rng.Int63n(3)
		}
		s.at(s.now+100_000_000, func() {
			s.emit(history.Event{Process: history.Nemesis, Type: history.Info, F: history.NFailover, Node: promoted, Detail: "old " + old})
			s.emit(history.Event{Process: history.Nemesis, Type: history.Info, F: "heal-replication", Node: old})
			s.emit(history.Event{Process: history.Nemesis, Type: history.Info, F: "restart", Node: old})
		})
	})
}
