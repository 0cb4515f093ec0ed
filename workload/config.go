package workload

import (
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
)

// ClientConfig is what the runner hands a client process (first stdin line).
// Durations are milliseconds so the JSON stays readable in run directories.
type ClientConfig struct {
	Slot       int         `json:"slot"`        // 0..NumClients-1: Event.Client and the first process id
	NumClients int         `json:"num_clients"` // process ids advance by this after an info, so they never collide
	Lock       lock.Config `json:"lock"`        // recipe, Sentinels, fencing, WAIT/WAITAOF
	Keys       []string    `json:"keys"`        // lock keys, lock:{name}; each cycle picks one at random

	TTLMs       int64 `json:"ttl_ms"`          // lease asked for on acquire and extend
	RenewMs     int64 `json:"renew_ms"`        // renew this long after the last grant, by the decision clock; 0: TTL/3
	ThinkMs     int64 `json:"think_ms"`        // work inside the critical section, between read and write
	Steps       int   `json:"steps,omitempty"` // critical sections per hold (a long job, e.g. an invoice run in batches); 0: 1
	PauseMs     int64 `json:"pause_ms"`        // idle time between release and the next acquire
	OpTimeoutMs int64 `json:"op_timeout_ms"`   // a lock or resource operation not answered by then is info; 0: 1000

	// ResourceAddr is the fenced resource service (resource.NewClient); empty
	// means a think-only section with no read or write events. The runner must
	// have created the rows (InitRun) for every key's name.
	ResourceAddr string `json:"resource_addr,omitempty"`
	// FenceSource "resource" asks the resource for a fence number right after
	// every grant (POST /v1/fence: the database's own sequence) and presents it
	// instead of one from the lock; "" or "valkey": the lock's own number.
	FenceSource string `json:"fence_source,omitempty"`
	// NoSection skips the critical section entirely: acquire then release (benchmarks).
	NoSection bool `json:"no_section,omitempty"`

	Seed          int64   `json:"seed"`                      // key choice; 0: derived from the slot
	ClockOffsetMs float64 `json:"clock_offset_ms,omitempty"` // initial decision-clock skew
	ClockRate     float64 `json:"clock_rate,omitempty"`      // initial decision-clock rate; 0 means 1
	MaxCycles     int     `json:"max_cycles,omitempty"`      // stop after this many acquire attempts; 0: until told
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// TTL and friends return the durations with defaults applied.
func (c *ClientConfig) TTL() time.Duration { return ms(c.TTLMs) }

// Renew is the renew interval.
func (c *ClientConfig) Renew() time.Duration {
	if c.RenewMs > 0 {
		return ms(c.RenewMs)
	}
	return c.TTL() / 3
}

// StepsOrOne is the number of critical sections per hold.
func (c *ClientConfig) StepsOrOne() int {
	if c.Steps > 0 {
		return c.Steps
	}
	return 1
}

// OpTimeout bounds every operation.
func (c *ClientConfig) OpTimeout() time.Duration {
	if c.OpTimeoutMs > 0 {
		return ms(c.OpTimeoutMs)
	}
	return time.Second
}

// Validate checks the config and fills the lock config's derived fields.
func (c *ClientConfig) Validate() error {
	switch {
	case c.NumClients < 1:
		return fmt.Errorf("client config: num_clients %d, want >= 1", c.NumClients)
	case c.Slot < 0 || c.Slot >= c.NumClients:
		return fmt.Errorf("client config: slot %d outside 0..%d", c.Slot, c.NumClients-1)
	case len(c.Keys) == 0:
		return fmt.Errorf("client config: no lock keys")
	case c.TTLMs <= 0:
		return fmt.Errorf("client config: ttl_ms %d, want > 0", c.TTLMs)
	case c.Renew() >= c.TTL():
		return fmt.Errorf("client config: renew every %v is not before the TTL %v runs out", c.Renew(), c.TTL())
	case c.ThinkMs < 0 || c.PauseMs < 0 || c.OpTimeoutMs < 0 || c.Steps < 0:
		return fmt.Errorf("client config: steps, think, pause and op timeout must be >= 0")
	case c.FenceSource != "" && c.FenceSource != history.FenceValkey && c.FenceSource != history.FenceResource:
		return fmt.Errorf("client config: fence_source %q, want valkey or resource", c.FenceSource)
	case c.FenceSource == history.FenceResource && c.ResourceAddr == "":
		return fmt.Errorf("client config: fence_source resource needs resource_addr: the resource issues the numbers")
	case c.ClockRate < 0:
		return fmt.Errorf("client config: clock_rate %v, want > 0", c.ClockRate)
	}
	c.Lock.TTL, c.Lock.RenewEvery, c.Lock.OpTimeout = c.TTL(), c.Renew(), c.OpTimeout()
	c.Lock.Client, c.Lock.ClockOffsetMs, c.Lock.ClockRate = c.Slot, c.ClockOffsetMs, c.ClockRate
	return c.Lock.Validate()
}
