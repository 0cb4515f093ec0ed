package workload

import (
	"context"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/resource"
)

// section is one step of the job: read the value, think, write value+1, each
// presenting the token and fence. The client checks its lease before the step,
// as applications check before each unit of work, and a step under way runs to
// its write: that is the gap a paused process falls into (it wakes up and
// writes, its lease long gone). A lost hold stops the job at the next step.
func (c *client) section(ctx context.Context, h *hold) {
	if h.isLost() {
		return
	}
	value := int64(0)
	if c.res != nil {
		v, ok := c.resourceOp(ctx, h, history.FRead, 0)
		if !ok {
			return
		}
		value = v
	}
	if think := ms(c.cfg.ThinkMs); think > 0 {
		c.em.flush() // without a resource, the grant's outcome may still be pending
		t := time.NewTimer(think)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	if c.res != nil {
		c.resourceOp(ctx, h, history.FWrite, value+1)
	}
}

// resourceOp performs a read or a write and records it. A rejected op is a
// fail (it had no effect) carrying the verdict and the resource's reason.
func (c *client) resourceOp(ctx context.Context, h *hold, f string, value int64) (int64, bool) {
	ev := history.Event{F: f, Key: h.key, Token: h.token, Fence: h.fence}
	if f == history.FWrite {
		ev.Value = history.Int64(value)
	}
	p := c.em.invoke(ev)
	holder := resource.Holder{RunID: RunID(h.key), Client: c.cfg.Slot, Process: int(p), Token: h.token, Fence: h.fence}
	octx, cancel := c.opCtx(ctx)
	var rep resource.Reply
	var err error
	if f == history.FRead {
		rep, err = c.res.Read(octx, holder)
	} else {
		rep, err = c.res.Write(octx, holder, value)
	}
	cancel()
	var t history.Type
	switch {
	case err != nil && resource.Unknown(err):
		t, ev.Error = history.Info, err.Error()
	case err != nil:
		t, ev.Error = history.Fail, err.Error()
	case rep.Accepted():
		t, ev.Verdict = history.OK, rep.Verdict
		ev.Value = history.Int64(rep.Value)
	default:
		t, ev.Verdict, ev.Error = history.Fail, rep.Verdict, rep.Reason
	}
	c.em.complete(p, t, ev)
	return rep.Value, t == history.OK
}
