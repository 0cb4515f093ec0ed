package workload

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/lockjepsen/lockjepsen/lock"
)

// extraControls are the controls of the redlock and stuck-lock faults:
//
//	{"unreachable": ["127.0.0.1:7003", ...]}   the recipe sends nothing to these nodes ([] heals)
//	{"crash": "mid-acquire"}                   SIGKILL this process at the next acquire's step point
type extraControls struct {
	Unreachable *[]string `json:"unreachable,omitempty"`
	Crash       string    `json:"crash,omitempty"`
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

// ArmCrash asks the client to SIGKILL itself at its next acquire's step point.
func (c *Client) ArmCrash() error {
	return c.send([]byte(`{"crash":"mid-acquire"}` + "\n"))
}
