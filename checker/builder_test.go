package checker

import (
	"encoding/json"

	"github.com/lockjepsen/lockjepsen/history"
)

// hb builds histories by hand. Times are milliseconds from the run's start;
// processes are numbered so that client = process % 100 (a client that saw an
// unknown outcome continues as process+100).
type hb struct {
	events []history.Event
	key    string
}

func newHB() *hb { return &hb{key: "lock:{job}"} }

func ms2ns(t float64) int64 { return simStart + int64(t*1e6) }

// op adds an invoke at call and, unless typ is "" (still in flight), a
// completion at ret. comp fields are merged into the completion.
func (h *hb) op(p int, inv history.Event, call, ret float64, typ history.Type, comp history.Event) *hb {
	inv.Process, inv.Client, inv.Type, inv.Time = history.Process(p), p%100, history.Invoke, ms2ns(call)
	if inv.Key == "" {
		inv.Key = h.key
	}
	h.events = append(h.events, inv)
	if typ == "" {
		return h
	}
	comp.Process, comp.Client, comp.Type, comp.Time, comp.F = history.Process(p), p%100, typ, ms2ns(ret), inv.F
	comp.Key, comp.Token = inv.Key, inv.Token
	h.events = append(h.events, comp)
	return h
}

func (h *hb) acq(p int, tok string, ttl int64, call, ret float64, typ history.Type, fence int64) *hb {
	return h.op(p, history.Event{F: history.FAcquire, Token: tok, TTLMs: ttl}, call, ret, typ, history.Event{Fence: fence})
}

func (h *hb) ext(p int, tok string, ttl int64, call, ret float64, typ history.Type) *hb {
	return h.op(p, history.Event{F: history.FExtend, Token: tok, TTLMs: ttl}, call, ret, typ, history.Event{})
}

func (h *hb) rel(p int, tok string, call, ret float64, typ history.Type) *hb {
	return h.op(p, history.Event{F: history.FRelease, Token: tok}, call, ret, typ, history.Event{})
}

func (h *hb) read(p int, tok string, fence, v int64, call, ret float64, typ history.Type) *hb {
	c := history.Event{Value: history.Int64(v), Verdict: history.Accepted}
	if typ == history.Fail {
		c = history.Event{Verdict: history.Rejected}
	}
	return h.op(p, history.Event{F: history.FRead, Token: tok, Fence: fence}, call, ret, typ, c)
}

func (h *hb) write(p int, tok string, fence, v int64, call, ret float64, typ history.Type) *hb {
	c := history.Event{Verdict: history.Accepted}
	if typ == history.Fail {
		c.Verdict = history.Rejected
	}
	if typ == history.Info {
		c.Verdict = ""
	}
	return h.op(p, history.Event{F: history.FWrite, Token: tok, Fence: fence, Value: history.Int64(v)}, call, ret, typ, c)
}

func (h *hb) nem(f, node string, t float64) *hb {
	h.events = append(h.events, history.Event{Process: history.Nemesis, Type: history.Info, F: f, Node: node, Time: ms2ns(t)})
	return h
}

func (h *hb) build() []history.Event {
	out := append([]history.Event(nil), h.events...)
	for i := range out {
		out[i].Index = int64(i)
	}
	history.Sort(out)
	return out
}

func jsonLine(e history.Event) ([]byte, error) {
	b, err := json.Marshal(&e)
	return append(b, '\n'), err
}
