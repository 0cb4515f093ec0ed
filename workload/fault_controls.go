package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/lock"
)

// extraControls are the controls of the client faults beyond the clock:
//
//	{"unreachable": ["127.0.0.1:7003", ...]}   the recipe sends nothing to these nodes ([] heals)
//	{"crash": "mid-acquire"}                   SIGKILL this process at the next acquire's step point
//	{"starve_renewals_ms": 3000}               the watchdog (renewals, lease-end watch) stalls this long
//	{"reply_fault": {"op": "release", "mode": "drop"}}   the next release's reply is dropped (lock.ReplyDrop, lock.ReplyCancel)
//	{"drop_conns": true}                       close the lock's connections from the client's side
type extraControls struct {
	DropConns        bool          `json:"drop_conns,omitempty"`
	Unreachable      *[]string     `json:"unreachable,omitempty"`
	Crash            string        `json:"crash,omitempty"`
	StarveRenewalsMs int64         `json:"starve_renewals_ms,omitempty"`
	ReplyFault       *ReplyControl `json:"reply_fault,omitempty"`
}

// ReplyControl arms a reply fault for the client's next operation Op
// (history.FAcquire or history.FRelease).
type ReplyControl struct {
	Op   string `json:"op"`
	Mode string `json:"mode"`
}

// crashArmed is set by a crash control: the next acquire that reaches a step
// point (after SETNX, before EXPIRE; after SET NX PX for the others) kills
// its own process, as a SIGKILL landing between two commands would.
var crashArmed atomic.Bool

func (c *client) applyExtra(line []byte) {
	var x extraControls
	if json.Unmarshal(line, &x) != nil {
		return
	}
	if x.Unreachable != nil {
		if r, ok := c.lk.(lock.Reachability); ok {
			r.SetUnreachable(*x.Unreachable)
			c.logf("unreachable nodes now %v", *x.Unreachable)
		} else {
			c.logf("recipe %s talks to one server: ignoring unreachable %v", c.lk.Recipe(), *x.Unreachable)
		}
	}
	if x.StarveRenewalsMs > 0 {
		d := time.Duration(x.StarveRenewalsMs) * time.Millisecond
		c.starvedUntil.Store(time.Now().Add(d).UnixNano())
		c.logf("watchdog starved for %v: no renewal, no lease-end check until then", d)
	}
	if x.DropConns {
		c.logf("dropped %d lock connection(s) from the client's side", lock.DropConns())
	}
	if x.ReplyFault != nil {
		c.replyMu.Lock()
		c.replyArmed = *x.ReplyFault
		c.replyMu.Unlock()
		c.logf("armed: %s the reply of the next %s", x.ReplyFault.Mode, x.ReplyFault.Op)
	}
	if x.Crash == "mid-acquire" {
		crashArmed.Store(true)
		c.logf("armed: crash at the next acquire's step point")
	}
}

// stepHook is the acquire's step callback.
func (c *client) stepHook(point string) {
	if crashArmed.Load() {
		c.logf("crash at %s: SIGKILL self", point)
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// SetUnreachable tells the client's recipe which nodes it cannot reach
// (nil or empty heals).
func (c *Client) SetUnreachable(addrs []string) error {
	if addrs == nil {
		addrs = []string{}
	}
	b, err := json.Marshal(extraControls{Unreachable: &addrs})
	if err != nil {
		return fmt.Errorf("encode unreachable control: %w", err)
	}
	return c.send(append(b, '\n'))
}

// starved holds the watchdog (renew and watchExpiry) while a starvation
// lasts, as a watchdog thread starved of CPU or of its executor would be:
// the application thread goes on with its job, trusting a lease nobody
// extends or checks (Redisson's watchdog, redisson/redisson#5698). It
// returns ctx's error when the hold ends meanwhile.
func (c *client) starved(ctx context.Context) error {
	until := c.starvedUntil.Load()
	d := time.Until(time.Unix(0, until))
	if until == 0 || d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// armReply arms the reply fault waiting for op, if any, on the operation
// about to go out (cancel is its context's); the returned function disarms,
// logs what the fault did and returns its mode when it reached the
// operation in flight, for the operation's completion event (Event.Reply),
// "" otherwise (it does nothing when nothing was armed).
func (c *client) armReply(op string, cancel context.CancelFunc) func() string {
	c.replyMu.Lock()
	rc := c.replyArmed
	if rc.Op != op {
		c.replyMu.Unlock()
		return func() string { return "" }
	}
	c.replyArmed = ReplyControl{}
	c.replyMu.Unlock()
	disarm, err := lock.ArmReply(rc.Mode, cancel)
	if err != nil {
		c.logf("reply fault: %v", err)
		return func() string { return "" }
	}
	return func() string {
		switch fate := disarm(); {
		case fate.Landed:
			c.logf("reply fault: %s the reply of this %s", rc.Mode, op)
			return rc.Mode
		case fate.Fired:
			c.logf("reply fault: %s the reply of this %s: answered before the %s went out, so it did not land", rc.Mode, op, rc.Mode)
		default:
			c.logf("reply fault: the %s wrote nothing on a connection the fault reaches; not fired", op)
		}
		return ""
	}
}

// ArmReply asks the client to drop or cancel (lock.ReplyDrop,
// lock.ReplyCancel) the reply of its next operation op.
func (c *Client) ArmReply(op, mode string) error {
	b, err := json.Marshal(extraControls{ReplyFault: &ReplyControl{Op: op, Mode: mode}})
	if err != nil {
		return fmt.Errorf("encode reply control: %w", err)
	}
	return c.send(append(b, '\n'))
}

// DropConns asks the client to close its lock connections from its side.
func (c *Client) DropConns() error {
	return c.send([]byte(`{"drop_conns":true}` + "\n"))
}

// StarveRenewals stalls the client's watchdog for d: its renewals and its
// check of the lease's end wait, its job does not.
func (c *Client) StarveRenewals(d time.Duration) error {
	b, err := json.Marshal(extraControls{StarveRenewalsMs: max(1, d.Milliseconds())})
	if err != nil {
		return fmt.Errorf("encode starve control: %w", err)
	}
	return c.send(append(b, '\n'))
}

// ArmCrash asks the client to SIGKILL itself at its next acquire's step point.
func (c *Client) ArmCrash() error {
	return c.send([]byte(`{"crash":"mid-acquire"}` + "\n"))
}
