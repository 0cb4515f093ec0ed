package history

import (
	"encoding/json"
	"math"
	"testing"
)

// The hand-rolled encoder writes what json.Marshal writes, byte for byte, for
// every field and the strings encoding/json escapes or checks.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	tok := "f3a9c0d2e1b4a5968778695a4b3c2d1e"
	cases := []struct {
		name string
		e    Event
	}{
		{"empty", Event{}},
		{"acquire invoke", Event{Time: 123456789, Process: 3, Client: 3, Type: Invoke, F: FAcquire, Key: "lock:{job-1}", Token: tok, TTLMs: 2000}},
		{"acquire ok fenced", Event{Time: 123456790, Process: 19, Client: 3, Type: OK, F: FAcquire, Key: "lock:{job-1}", Token: tok, Fence: 42, FenceSource: FenceValkey, ValidityMs: 1990}},
		{"write with value zero", Event{Index: 7, Time: 1, Process: 0, Type: OK, F: FWrite, Key: "k", Token: "A", Value: Int64(0), Verdict: Accepted}},
		{"negative numbers", Event{Index: -1, Time: -5, Process: 2, Type: Fail, F: FExtend, Key: "k", Token: "A", TTLMs: -3, Fence: math.MinInt64, Value: Int64(math.MaxInt64), ValidityMs: -9, Client: -4}},
		{"nemesis", Event{Index: 12, Time: 99, Process: Nemesis, Type: Info, F: "kill", Node: "valkey-0", Role: "primary", Detail: "offset 1234, 3 replicas"}},
		{"error with quotes and newline", Event{Time: 5, Process: 1, Type: Info, F: FRelease, Key: "k", Token: "A", Error: "DELIFEQ: read tcp 127.0.0.1:4242->127.0.0.1:6379: i/o \"timeout\"\n\tat\\x"}},
		{"html characters", Event{Time: 5, Process: 1, Type: Fail, F: FAcquire, Key: "k<&>", Token: "A", Error: "a <b> & c"}},
		{"non-ascii and line separators", Event{Time: 5, Process: 1, Type: Info, F: "clock", Detail: "skew ±1.5 s\u2028next\u2029 é \x01"}},
		{"invalid utf-8", Event{Time: 5, Process: 1, Type: Info, F: "note", Detail: "bad \xff\xfe byte"}},
		{"every field", Event{Index: 1, Time: 2, Process: 3, Type: OK, F: FRead, Client: 4, Key: "k", Token: "t", TTLMs: 5, Fence: 6, FenceSource: FenceResource, Value: Int64(7), Node: "n", Error: "e", ValidityMs: 8, Expiry: ExpiryNone, Verdict: Rejected, Reply: ReplyCancel, Role: "r", Detail: "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := json.Marshal(&c.e)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendJSON(nil, &c.e); string(got) != string(want) {
				t.Errorf("AppendJSON\n got %s\nwant %s", got, want)
			}
		})
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	evs := benchEvents()
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf = AppendJSON(buf[:0], &evs[i%len(evs)])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(&evs[i%len(evs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchEvents are a client's typical lines: an acquire, its grant, a write
// at the resource, the release.
func benchEvents() []Event {
	tok := "f3a9c0d2e1b4a5968778695a4b3c2d1e"
	return []Event{
		{Time: 812345678901, Process: 3, Client: 3, Type: Invoke, F: FAcquire, Key: "lock:{job-1}", Token: tok, TTLMs: 2000},
		{Time: 812345778901, Process: 3, Client: 3, Type: OK, F: FAcquire, Key: "lock:{job-1}", Token: tok, Fence: 42, FenceSource: FenceValkey},
		{Time: 812345878901, Process: 3, Client: 3, Type: OK, F: FWrite, Key: "lock:{job-1}", Token: tok, Fence: 42, Value: Int64(7), Verdict: Accepted},
		{Time: 812345978901, Process: 3, Client: 3, Type: OK, F: FRelease, Key: "lock:{job-1}", Token: tok},
	}
}

// Unmarshal decodes a line as json.Unmarshal does: the lines AppendJSON
// writes (fast path) and every other form (encoding/json's own), unknown
// fields ignored and keys matched case-insensitively as it matches them.
func TestUnmarshalMatchesJSON(t *testing.T) {
	lines := []string{
		`{"index":3,"time":5,"process":"nemesis","type":"info","f":"kill","node":"valkey-0","role":"primary"}`,
		`{"time":5,"process":2,"type":"ok","f":"read","key":"k","token":"A","value":0,"verdict":"accepted"}`,
		`{"time":5,"process":2,"type":"info","f":"release","key":"k","token":"A","error":"i/o \"timeout\"\n"}`,
		`{"time":5,"process":2,"type":"ok","f":"acquire","key":"k","token":"A","colour":"red"}`,
		`{"Time":5,"PROCESS":2,"type":"ok","f":"acquire","key":"k","token":"A"}`,
		`{"time":5,"process":2,"type":"ok","f":"write","key":"k","token":"A","value":null}`,
		` { "time" : 5 , "process" : 2 , "type" : "ok" , "f" : "acquire" } ` + "\n",
		`{"time":1.5,"process":2,"type":"ok","f":"acquire"}`,
		`{"time":5,"process":-1,"type":"ok","f":"acquire"}`,
		`{"time":5,"process":2,"type":"ok","f":"acquire","key":"k\u00e9"}`,
		`{"time":5,"process":2,"type":"ok"`,
		`not json`,
	}
	for _, e := range benchEvents() {
		lines = append(lines, string(AppendJSON(nil, &e))+"\n")
	}
	for _, l := range lines {
		var want, got Event
		werr := json.Unmarshal([]byte(l), &want)
		gerr := Unmarshal([]byte(l), &got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, json.Unmarshal's %v", l, gerr, werr)
			continue
		}
		if wb, gb := AppendJSON(nil, &want), AppendJSON(nil, &got); string(wb) != string(gb) {
			t.Errorf("%s:\n got %s\nwant %s", l, gb, wb)
		}
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	var lines [][]byte
	for _, e := range benchEvents() {
		lines = append(lines, append(AppendJSON(nil, &e), '\n'))
	}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var e Event
			if err := Unmarshal(lines[i%len(lines)], &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var e Event
			if err := json.Unmarshal(lines[i%len(lines)], &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Every field AppendJSON writes takes the fast path: a field left out of
// decodeFast sent every line carrying it through encoding/json.
func TestDecodeFastTakesEveryField(t *testing.T) {
	e := Event{Index: 1, Time: 2, Process: 3, Type: OK, F: FRead, Client: 4, Key: "k", Token: "t", TTLMs: 5, Fence: 6, FenceSource: FenceResource, Value: Int64(7), Node: "n", Error: "e", ValidityMs: 8, Verdict: Rejected, Role: "r", Detail: "d"}
	line := AppendJSON(nil, &e)
	var got Event
	if err := decodeFast(line, &got, nil); err != nil {
		t.Fatalf("decodeFast(%s): %v", line, err)
	}
	if g := AppendJSON(nil, &got); string(g) != string(line) {
		t.Errorf("decodeFast round trip\n got %s\nwant %s", g, line)
	}
}
