package runner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// tracker follows the merged event stream as it is written: who holds what
// (for the nemesis's targets), live counters for the progress line, and a cheap
// online detector of double grants ("violations seen so far"; the checker
// decides for real afterwards).
type tracker struct {
	mu       sync.Mutex
	ttl      time.Duration
	invokes  map[history.Process]history.Event
	holders  map[int]nemesis.Holder
	leases   map[string]lease // key -> latest grant
	ops      int
	faults   int
	suspects int
	marks    *marks.Catalog // which nemesis events begin a fault, gathered once
	changed  chan struct{}  // closed and replaced on every acquire ok and every guard refusal
	lastOK   int64
	// refusals are the latest acquires the replication guard refused,
	// oldest first, for AwaitGrant; trimmed to the last keepRefusals (a
	// min-replicas cell with its replicas cut off refuses hundreds a second).
	refusals []nemesis.Refusal
	pending  []history.Event
	dinv     map[history.Process]history.Event
}

type lease struct {
	token  string
	client int
	until  int64 // earliest the lease can end: grant invoke + ttl
}

func newTracker(ttl time.Duration) *tracker {
	return &tracker{
		ttl: ttl, invokes: map[history.Process]history.Event{}, holders: map[int]nemesis.Holder{},
		leases: map[string]lease{}, changed: make(chan struct{}), dinv: map[history.Process]history.Event{},
		marks: nemesis.Catalog(),
	}
}

// observe takes events in arrival order. Holders are updated at once (the
// nemesis needs the current holder); the double-grant detector waits until
// events are a second old and replays them in true-time order, because events
// from different client pipes arrive out of order.
func (t *tracker) observe(e history.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !e.IsClient() {
		if _, ok := t.marks.Of(e.F); ok {
			t.faults++
		}
		return
	}
	t.pending = append(t.pending, e)
	if e.Type == history.Invoke {
		t.invokes[e.Process] = e
		if e.F == history.FRelease {
			delete(t.holders, e.Client)
		}
		return
	}
	t.ops++
	inv := t.invokes[e.Process]
	delete(t.invokes, e.Process)
	switch {
	case inv.F == history.FAcquire && e.Type == history.OK:
		t.holders[e.Client] = nemesis.Holder{Client: e.Client, Key: inv.Key, Token: inv.Token, Since: e.Time}
		t.lastOK = e.Time
		t.signal()
	case inv.F == history.FAcquire && e.Type == history.Fail:
		if r := history.RefusalReason(e.Error); guardReasons[r] {
			t.refusals = append(t.refusals, nemesis.Refusal{Client: e.Client, Key: inv.Key, Reason: r, Error: e.Error, Invoked: inv.Time, Time: e.Time})
			if len(t.refusals) >= 2*keepRefusals {
				t.refusals = append(t.refusals[:0], t.refusals[len(t.refusals)-keepRefusals:]...)
			}
			t.signal()
		}
	case inv.F == history.FExtend && e.Type == history.Fail:
		delete(t.holders, e.Client)
	case inv.F == history.FExtend && e.Type == history.OK:
		if h, ok := t.holders[e.Client]; ok {
			h.Renewed = e.Time
			t.holders[e.Client] = h
		}
	}
}

// guardReasons are the refusals AwaitGrant can end at: the replication
// guard's, not contention (the lock working) nor a dead or demoted primary
// (the fault's own cost).
var guardReasons = map[string]bool{nemesis.GuardNoReplicas: true, nemesis.GuardWait: true, nemesis.GuardWaitAOF: true}

// keepRefusals bounds the refusals kept: a waiting fault wakes at each one,
// so the first after its start is among the last few unless thousands came
// while it looked.
const keepRefusals = 64

// signal wakes the waiters of AwaitGrant (t.mu held).
func (t *tracker) signal() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// firstRefusal is the earliest refusal kept of an acquire invoked after
// `after` for one of the closing reasons (t.mu held).
func (t *tracker) firstRefusal(after int64, closing []string) (nemesis.Refusal, bool) {
	var first nemesis.Refusal
	found := false
	for _, r := range t.refusals {
		if r.Invoked > after && slices.Contains(closing, r.Reason) && (!found || r.Time < first.Time) {
			first, found = r, true
		}
	}
	return first, found
}

// drain replays events older than `before` in time order through the cheap
// online detector: a grant while another token's lease, counted from the
// invoke of its last ok grant or extend, cannot have ended and was not
// released. The checker decides for real afterwards.
func (t *tracker) drain(before int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	history.Sort(t.pending)
	n := 0
	for n < len(t.pending) && t.pending[n].Time < before {
		n++
	}
	for _, e := range t.pending[:n] {
		if e.Type == history.Invoke {
			t.dinv[e.Process] = e
			if e.F == history.FRelease {
				if l, ok := t.leases[e.Key]; ok && l.token == e.Token {
					delete(t.leases, e.Key)
				}
			}
			continue
		}
		inv := t.dinv[e.Process]
		delete(t.dinv, e.Process)
		if e.Type != history.OK {
			continue
		}
		switch inv.F {
		case history.FAcquire:
			if l, ok := t.leases[inv.Key]; ok && l.token != inv.Token && e.Time < l.until {
				t.suspects++
			}
			t.leases[inv.Key] = lease{token: inv.Token, client: e.Client, until: inv.Time + int64(t.ttl)}
		case history.FExtend:
			if l, ok := t.leases[inv.Key]; ok && l.token == inv.Token {
				l.until = inv.Time + int64(t.ttl)
				t.leases[inv.Key] = l
			}
		}
	}
	t.pending = append(t.pending[:0], t.pending[n:]...)
}

func (t *tracker) counts() (ops, faults, suspects int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ops, t.faults, t.suspects
}

// env is the nemesis's view of the run.
type env struct {
	r *run
}

var _ nemesis.Env = env{}

func (e env) Cluster() cluster.Runtime { return e.r.cluster }

func (e env) Log(ev history.Event) {
	ev.Process, ev.Type, ev.Time = history.Nemesis, history.Info, truetime.Now()
	e.r.record(ev)
}

func (e env) Holders() []nemesis.Holder {
	t := e.r.track
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []nemesis.Holder
	for _, h := range t.holders {
		out = append(out, h)
	}
	// Oldest first, so the pick is deterministic given the history.
	slices.SortStableFunc(out, func(a, b nemesis.Holder) int { return cmp.Compare(a.Since, b.Since) })
	return out
}

func (e env) AwaitAcquire(ctx context.Context, after int64) bool {
	granted, _ := e.r.track.awaitGrant(ctx, after, nil)
	return granted
}

func (e env) AwaitGrant(ctx context.Context, after int64, closing []string) (bool, *nemesis.Refusal) {
	return e.r.track.awaitGrant(ctx, after, closing)
}

func (t *tracker) awaitGrant(ctx context.Context, after int64, closing []string) (bool, *nemesis.Refusal) {
	for {
		t.mu.Lock()
		if t.lastOK > after {
			t.mu.Unlock()
			return true, nil
		}
		if r, ok := t.firstRefusal(after, closing); ok {
			t.mu.Unlock()
			return false, &r
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, nil
		}
	}
}

func (e env) client(i int) (clientHandle, error) {
	if i < 0 || i >= len(e.r.clients) {
		return nil, fmt.Errorf("no client %d", i)
	}
	return e.r.clients[i], nil
}

func (e env) PauseClient(i int) error {
	c, err := e.client(i)
	if err != nil {
		return err
	}
	return signalClient(c, "STOP")
}

func (e env) ResumeClient(i int) error {
	c, err := e.client(i)
	if err != nil {
		return err
	}
	return signalClient(c, "CONT")
}

func (e env) SkewClient(i int, offset time.Duration, rate float64) error {
	c, err := e.client(i)
	if err != nil {
		return err
	}
	return c.SetClock(offset, rate)
}

func (e env) TTL() time.Duration       { return e.r.cfg.TTL }
func (e env) DownAfter() time.Duration { return e.r.cfg.Cluster.DownAfter }
