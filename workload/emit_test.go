package workload

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// writes records each Write as one chunk: what crossed the pipe together.
type writes struct{ chunks []string }

func (w *writes) Write(p []byte) (int, error) {
	w.chunks = append(w.chunks, string(p))
	return len(p), nil
}

// A completion the main lane goes straight on from waits for the next line
// and leaves with it in one write; flush and every other write take it too,
// so nothing is left behind and the file order is the stamping order.
func TestEmitterCompleteLater(t *testing.T) {
	acq := history.Event{F: history.FAcquire, Key: "k", Token: "t"}
	rel := history.Event{F: history.FRelease, Key: "k", Token: "t"}
	ext := history.Event{F: history.FExtend, Key: "k", Token: "t"}
	for _, tc := range []struct {
		name string
		do   func(e *emitter)
		want []string // each chunk's events, "type f" joined by ","
	}{
		{"an acquire's outcome goes with the release's invoke", func(e *emitter) {
			p := e.invoke(acq)
			e.completeLater(p, history.OK, acq)
			p = e.invoke(rel)
			e.completeLater(p, history.OK, rel)
			e.flush()
		}, []string{"invoke acquire", "ok acquire,invoke release", "ok release"}},
		{"the renewer's line takes the pending one first", func(e *emitter) {
			p := e.invoke(acq)
			e.completeLater(p, history.OK, acq)
			q := e.invokeOn(laneRenew, ext)
			e.complete(q, history.OK, ext)
		}, []string{"invoke acquire", "ok acquire,invoke extend", "ok extend"}},
		{"flush with nothing pending writes nothing", func(e *emitter) {
			e.flush()
			p := e.invoke(acq)
			e.complete(p, history.Fail, acq)
			e.flush()
		}, []string{"invoke acquire", "fail acquire"}},
		{"an info still retires its process", func(e *emitter) {
			p := e.invoke(acq)
			e.completeLater(p, history.Info, acq)
			if e.pid(laneMain) == p {
				panic("the process of an info was reused")
			}
			e.flush()
		}, []string{"invoke acquire", "info acquire"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			e := newEmitter(&w, 0, 4)
			tc.do(e)
			var got []string
			var last int64
			for _, c := range w.chunks {
				var evs []string
				for _, line := range strings.Split(strings.TrimSuffix(c, "\n"), "\n") {
					var ev history.Event
					if err := history.Unmarshal([]byte(line), &ev); err != nil {
						t.Fatalf("line %q: %v", line, err)
					}
					if ev.Time < last {
						t.Errorf("%s stamped %d, before the line ahead of it (%d)", line, ev.Time, last)
					}
					last = ev.Time
					evs = append(evs, string(ev.Type)+" "+ev.F)
				}
				got = append(got, strings.Join(evs, ","))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("writes %q, want %q", got, tc.want)
			}
			if !bytes.HasSuffix([]byte(strings.Join(w.chunks, "")), []byte("\n")) {
				t.Error("the last write does not end a line")
			}
		})
	}
}
