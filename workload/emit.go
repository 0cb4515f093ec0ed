package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// emitter writes events to the runner and hands out process ids. After an
// info a client continues as process slot + k*NumClients (k = infos so far),
// Jepsen's rule: an op whose outcome is unknown may still be in flight, so the
// process that issued it never issues another.
type emitter struct {
	mu    sync.Mutex
	out   io.Writer
	slot  int
	n     int
	infos int
	err   error // first write error: the runner is gone
}

func newEmitter(out io.Writer, slot, n int) *emitter {
	return &emitter{out: out, slot: slot, n: n}
}

func (e *emitter) pid() history.Process {
	return history.Process(e.slot + e.infos*e.n)
}

// invoke stamps and writes an invoke event under the current process id and
// returns that id for the completion.
func (e *emitter) invoke(ev history.Event) history.Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Process, ev.Type = e.pid(), history.Invoke
	e.writeLocked(ev)
	return ev.Process
}

// complete writes the outcome of the op invoked as p; an info retires p.
func (e *emitter) complete(p history.Process, t history.Type, ev history.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Process, ev.Type = p, t
	e.writeLocked(ev)
	if t == history.Info && p == e.pid() {
		e.infos++
	}
}

func (e *emitter) writeLocked(ev history.Event) {
	ev.Time = truetime.Now()
	ev.Client = e.slot
	b, err := json.Marshal(&ev)
	if err != nil {
		e.setErr(fmt.Errorf("encode event: %w", err))
		return
	}
	// One Write per line: a client killed mid-write leaves at most a torn
	// last line, which the reader drops.
	if _, err := e.out.Write(append(b, '\n')); err != nil {
		e.setErr(fmt.Errorf("write event: %w", err))
	}
}

func (e *emitter) setErr(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *emitter) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
