package workload

import (
	"fmt"
	"io"
	"sync"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// Lanes are a client's concurrent threads of operations: the main lane
// (acquire, read, write, release) and the renewer, whose extends overlap the
// critical section. Each lane is its own process in the history, because a
// process may have only one operation in flight (porcupine's rule).
const (
	laneMain  = 0
	laneRenew = 1
	lanes     = 2
)

// emitter writes events to the runner and hands out process ids. Lane l of
// client slot s is process s + (lanes*k + l)*NumClients, where k counts the
// lane's infos so far: after an info the lane continues under a new process
// (Jepsen's rule: an op whose outcome is unknown may still be in flight, so
// the process that issued it never issues another). slot = process mod
// NumClients, and no two clients' processes collide.
type emitter struct {
	mu    sync.Mutex
	out   io.Writer
	slot  int
	n     int
	infos [lanes]int
	buf   []byte // the line being written, reused
	err   error  // first write error: the runner is gone
}

func newEmitter(out io.Writer, slot, n int) *emitter {
	return &emitter{out: out, slot: slot, n: n}
}

func (e *emitter) pid(lane int) history.Process {
	return history.Process(e.slot + (lanes*e.infos[lane]+lane)*e.n)
}

// invoke stamps and writes an invoke event under the main lane's process.
func (e *emitter) invoke(ev history.Event) history.Process { return e.invokeOn(laneMain, ev) }

// invokeOn writes an invoke event under lane's current process id and returns
// that id for the completion.
func (e *emitter) invokeOn(lane int, ev history.Event) history.Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Process, ev.Type = e.pid(lane), history.Invoke
	e.writeLocked(ev)
	return ev.Process
}

// complete writes the outcome of the op invoked as p; an info retires p.
func (e *emitter) complete(p history.Process, t history.Type, ev history.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Process, ev.Type = p, t
	e.writeLocked(ev)
	if t == history.Info {
		for l := 0; l < lanes; l++ {
			if p == e.pid(l) {
				e.infos[l]++
			}
		}
	}
}

func (e *emitter) writeLocked(ev history.Event) {
	ev.Time = truetime.Now()
	ev.Client = e.slot
	e.buf = append(history.AppendJSON(e.buf[:0], &ev), '\n')
	// One Write per line: a client killed mid-write leaves at most a torn
	// last line, which the reader drops.
	if _, err := e.out.Write(e.buf); err != nil {
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
