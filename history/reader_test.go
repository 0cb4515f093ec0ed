package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Malformed histories are refused before anything judges them, naming the
// line and what is wrong, whether or not lines carry an index.
func TestReadRefusesMalformed(t *testing.T) {
	const (
		acq    = `{"time":100000000,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":1000}`
		acqOK  = `{"time":100500000,"process":0,"type":"ok","f":"acquire","key":"k","token":"A"}`
		relInv = `{"time":50000000,"process":0,"type":"invoke","f":"release","key":"k","token":"A"}`
	)
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{"time goes backwards", []string{acq, acqOK, relInv},
			"h.jsonl:3: process 0's time goes backwards (50 ms after 100.5 ms on line 2)"},
		{"completion before invoke", []string{acq, `{"time":90000000,"process":0,"type":"ok","f":"acquire","key":"k","token":"A"}`},
			"h.jsonl:2: completion stamped before its invoke (90 ms, invoked at 100 ms on line 1)"},
		{"completion with another token", []string{acq, `{"time":100500000,"process":0,"type":"ok","f":"acquire","key":"k","token":"B"}`},
			`h.jsonl:2: completion's token "B" differs from its invoke's "A" (line 1)`},
		{"acquire without ttl", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A"}`},
			`h.jsonl:1: acquire invoke without "ttl_ms" (the lease asked for, > 0)`},
		{"extend with negative ttl", []string{acq, acqOK, `{"time":100600000,"process":1,"type":"invoke","f":"extend","key":"k","token":"A","ttl_ms":-5}`},
			`h.jsonl:3: extend with a negative "ttl_ms" (-5)`},
		{"ttl overflows in ns", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":9223372036854775}`},
			`h.jsonl:1: acquire "ttl_ms" 9223372036854775 overflows when turned into nanoseconds (at most 2305843009213 ms)`},
		{"time near the int64 limit", []string{`{"time":9223372036854775000,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":10}`},
			`h.jsonl:1: "time" 9223372036854775000 is beyond CLOCK_MONOTONIC's range (at most 2^61 ns, 73 years)`},
		{"unknown expiry", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":5,"expiry":"never"}`},
			`h.jsonl:1: "expiry" must be "none" or absent, got "never"`},
		{"unknown reply", []string{acq, `{"time":100500000,"process":0,"type":"info","f":"acquire","key":"k","token":"A","reply":"lost"}`},
			`h.jsonl:2: "reply" must be "cancel", "drop" or absent, got "lost"`},
		{"reply on an invoke", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":5,"reply":"drop"}`},
			`h.jsonl:1: invoke acquire with "reply": only an acquire's, an extend's or a release's completion is reached by a reply fault`},
		{"expiry on a release", []string{`{"time":1,"process":0,"type":"invoke","f":"release","key":"k","token":"A","expiry":"none"}`},
			`h.jsonl:1: release with "expiry": only an acquire or an extend asks for a lease`},
		{"completion without invoke", []string{acqOK},
			"h.jsonl:1: ok acquire on process 0 without a preceding invoke"},
		{"two ops in flight", []string{acq, `{"time":100000001,"process":0,"type":"invoke","f":"release","key":"k","token":"A"}`},
			"h.jsonl:2: process 0 invokes release while its acquire (line 1) has not completed; a process may have one operation in flight"},
		{"completion of another f", []string{acq, `{"time":100500000,"process":0,"type":"ok","f":"release","key":"k","token":"A"}`},
			"h.jsonl:2: ok release completes process 0's acquire (line 1)"},
		{"unknown field", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":5,"colour":"red"}`},
			`h.jsonl:1: not a valid event: json: unknown field "colour"`},
		{"bad type", []string{`{"time":1,"process":0,"type":"maybe","f":"acquire","key":"k","token":"A"}`},
			`h.jsonl:1: "type" must be invoke, ok, fail or info, got "maybe"`},
		{"client op without key", []string{`{"time":1,"process":0,"type":"invoke","f":"read","token":"A"}`},
			`h.jsonl:1: client operation without "key"`},
		{"nemesis not info", []string{`{"time":1,"process":"nemesis","type":"ok","f":"kill"}`},
			`h.jsonl:1: nemesis events have "type" info, got "ok"`},
		{"indexed lines too", []string{`{"index":0,` + acq[1:], `{"index":1,` + acqOK[1:], `{"index":2,` + relInv[1:]},
			"h.jsonl:3: process 0's time goes backwards"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(strings.Join(c.lines, "\n")+"\n"), "h.jsonl")
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a ParseError", err)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err\n  %v\nwant\n  %s", err, c.want)
			}
		})
	}
}

func TestReadAcceptsAndSorts(t *testing.T) {
	h := `{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":10}
{"index":1,"time":3,"process":"nemesis","type":"info","f":"kill","node":"valkey-1"}
{"index":2,"time":7,"process":0,"type":"ok","f":"acquire","key":"k","token":"A","ttl_ms":10,"fence":3}
{"index":3,"time":8,"process":1,"type":"invoke","f":"rel`
	ev, err := Read(strings.NewReader(h), "h")
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 3 || ev[0].F != "kill" || ev[2].Fence != 3 {
		t.Fatalf("events %+v", ev)
	}
}

// FuzzRead: the reader never panics, and every error it returns names a line.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}` + "\n" +
		`{"index":1,"time":6,"process":0,"type":"ok","f":"acquire","key":"k","token":"t"}` + "\n"))
	f.Add([]byte(`{"index":0,"time":5,"process":"nemesis","type":"info","f":"kill","node":"valkey-1"}` + "\n"))
	f.Add([]byte(`{"time":9223372036854775807,"process":0,"type":"invoke","f":"extend","key":"k","token":"t","ttl_ms":-1}` + "\n"))
	f.Add([]byte("{\"index\":0,\"time\":5,\"proc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for i := range ev {
			if Validate(&ev[i]) != nil {
				t.Fatalf("accepted an invalid event %+v", ev[i])
			}
		}
	})
}

// The fast decoder and encoding/json agree on every line either accepts.
func FuzzDecodeAgrees(f *testing.F) {
	f.Add([]byte(`{"index":3,"time":5,"process":"nemesis","type":"info","f":"kill","node":"valkey-1","detail":"x"}`))
	f.Add([]byte(`{"time":5,"process":2,"type":"ok","f":"write","client":2,"key":"k","token":"t","value":-4,"verdict":"accepted","fence":9}`))
	f.Add([]byte(`{"time":5,"process":2,"type":"ok","f":"write","key":"k\u0041","token":"t"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow Event
		in := make(interner)
		if decodeFast(b, &fast, &in) != nil {
			return
		}
		if err := decodeEvent(b, &slow); err != nil {
			t.Fatalf("fast accepted what encoding/json refuses (%v): %s", err, b)
		}
		fb, _ := json.Marshal(fast)
		sb, _ := json.Marshal(slow)
		if string(fb) != string(sb) {
			t.Fatalf("fast %s\nslow %s", fb, sb)
		}
	})
}
