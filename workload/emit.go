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
	// pend holds the lines not yet written: a completion the main lane
	// goes straight on from (completeLater) waits here for the next line
	// and leaves with it in one Write. An acquire's outcome and the
	// release's invoke, or a release's outcome and the next acquire's
	// invoke, cross the pipe together: one write and one wake-up of the
	// runner instead of two, for nothing the history records differently
	// (each event is stamped when it happens, and the file order is the
	// stamping order). Every write takes pend with it, and flush empties
	// it before the main lane waits on anything but its own next line.
	pend []byte
	err  error // first write error: the runner is gone
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
	e.writeOutLocked()
	return ev.Process
}

// complete writes the outcome of the op invoked as p; an info retires p.
func (e *emitter) complete(p history.Process, t history.Type, ev history.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.completeLocked(p, t, ev)
	e.writeOutLocked()
}

// completeLater records the outcome of the op invoked as p, stamped now, to
// be written with the next line or at the next flush. Only the main lane
// uses it, where its next step is an invoke or a flush with nothing that
// waits between (a SIGKILL in that gap loses the outcome exactly as one
// between the reply and an immediate write would).
func (e *emitter) completeLater(p history.Process, t history.Type, ev history.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.completeLocked(p, t, ev)
}

func (e *emitter) completeLocked(p history.Process, t history.Type, ev history.Event) {
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

// flush writes what completeLater left pending.
func (e *emitter) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writeOutLocked()
}

// writeLocked stamps ev and appends its line to pend.
func (e *emitter) writeLocked(ev history.Event) {
	ev.Time = truetime.Now()
	ev.Client = e.slot
	e.pend = append(history.AppendJSON(e.pend, &ev), '\n')
}

// writeOutLocked writes pend in one Write: two or three lines, well under
// PIPE_BUF, so the pipe takes them whole, and a client killed mid-write
// leaves at most a torn last line, which the reader drops.
func (e *emitter) writeOutLocked() {
	if len(e.pend) == 0 {
		return
	}
	if _, err := e.out.Write(e.pend); err != nil {
		e.setErr(fmt.Errorf("write event: %w", err))
	}
	e.pend = e.pend[:0]
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
