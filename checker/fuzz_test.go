package checker

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// FuzzRead feeds arbitrary bytes to the history reader and whatever it accepts
// to the checker: neither may panic or hang, and the reader's errors must name
// a line.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	events, _, _ := simulate(simConfig{Seed: 1, Clients: 3, Keys: 1, Events: 60, TTLms: 100, PInfo: 0.1, PPause: 0.1})
	for _, e := range events {
		b, _ := jsonLine(e)
		buf.Write(b)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"index":0,"time":5,"process":"nemesis","type":"info","f":"kill","node":"valkey-1"}` + "\n"))
	f.Add([]byte(`{"index":0,"time":5,"process":1,"type":"ok","f":"acquire","key":"k","token":"t"}` + "\n"))
	f.Add([]byte("{\"index\":0,\"time\":5,\"proc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := history.Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if _, err := Check(ev, nil, Options{Marks: testMarks, Budget: 200 * time.Millisecond}); err != nil {
			return
		}
	})
}

// FuzzModels drives the lock and resource models with operations decoded from
// bytes: any interleaving of grants, extends, releases, sections and unknown
// outcomes, checked with a budget. Nothing may panic or run past the budget.
func FuzzModels(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add(bytes.Repeat([]byte{3, 200, 17, 1}, 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHB()
		clock := 0.0
		for i := 0; i+4 <= len(data) && i < 400; i += 4 {
			kind, who, dur, gap := data[i], int(data[i+1]%4), float64(data[i+2]%50), float64(data[i+3]%20)
			tok := string(rune('A' + who))
			typ := []history.Type{ok, fail, info}[int(kind/16)%3]
			ttl := int64(binary.LittleEndian.Uint16([]byte{data[i+2], 0})) + 1
			switch kind % 6 {
			case 0:
				h.acq(who+100*(i%7), tok, ttl, clock, clock+dur, typ, int64(kind))
			case 1:
				h.ext(who+100*(i%7), tok, ttl, clock, clock+dur, typ)
			case 2:
				h.rel(who+100*(i%7), tok, clock, clock+dur, typ)
			case 3:
				h.read(who+100*(i%7), tok, int64(kind%5), int64(gap), clock, clock+dur, typ)
			case 4:
				h.write(who+100*(i%7), tok, int64(kind%5), int64(gap), clock, clock+dur, typ)
			case 5:
				h.nem("kill", "valkey-1", clock)
			}
			clock += dur + gap + 0.001
		}
		// Hand-built ops on one process may overlap; only well-formed
		// histories reach the models.
		began := time.Now()
		if _, err := Check(h.build(), nil, Options{Marks: testMarks, Budget: 300 * time.Millisecond, Pictures: true}); err != nil {
			return
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("check took %v", d)
		}
	})
}
