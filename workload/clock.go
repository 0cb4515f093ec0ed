package workload

import (
	"context"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/truetime"
)

// Clock is a client's decision clock: when its lease ends, when to renew. It
// runs at rate times true time plus an offset, both changeable while the
// client runs (the nemesis skews it). Event timestamps never use it.
//
// A rate change is continuous (the clock bends, it does not jump); an offset
// change jumps by the difference, which is how a wall clock step looks.
type Clock struct {
	mu         sync.Mutex
	anchorTrue int64   // true time of the last rate change
	anchorDec  int64   // unskewed decision time at anchorTrue
	rate       float64 // decision ns per true ns
	offset     int64   // ns added on top
	changed    chan struct{}
}

// NewClock starts equal to true time.
func NewClock() *Clock {
	now := truetime.Now()
	return &Clock{anchorTrue: now, anchorDec: now, rate: 1, changed: make(chan struct{})}
}

func (c *Clock) nowLocked(t int64) int64 {
	return c.anchorDec + int64(float64(t-c.anchorTrue)*c.rate) + c.offset
}

// Now returns decision time in ns, on the scale of truetime.Now.
func (c *Clock) Now() int64 {
	t := truetime.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(t)
}

// Set changes the offset and the rate (rate <= 0 keeps the current rate) and
// wakes every sleeper to recompute its deadline.
func (c *Clock) Set(offset time.Duration, rate float64) {
	t := truetime.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.anchorDec += int64(float64(t-c.anchorTrue) * c.rate)
	c.anchorTrue = t
	if rate > 0 {
		c.rate = rate
	}
	c.offset = int64(offset)
	close(c.changed)
	c.changed = make(chan struct{})
}

// SleepUntil blocks until decision time reaches dec, or ctx ends.
func (c *Clock) SleepUntil(ctx context.Context, dec int64) error {
	for {
		t := truetime.Now()
		c.mu.Lock()
		now, rate, changed := c.nowLocked(t), c.rate, c.changed
		c.mu.Unlock()
		if now >= dec {
			return nil
		}
		timer := time.NewTimer(time.Duration(float64(dec-now)/rate) + time.Microsecond)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-changed:
			timer.Stop()
		case <-timer.C:
		}
	}
}
