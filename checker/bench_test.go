package checker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// Benchmarks on generated histories: 16 clients, 4 keys, 1% unknown outcomes,
// clean or with one injected double grant; and a history shaped like a fault
// run (60 s, 16 clients, 5 failovers, ~50 unknown outcomes).
//
//	go test ./checker -run XXX -bench . -benchmem -benchtime 1x

var benchCache sync.Map

func benchHistory(b *testing.B, cfg simConfig) []history.Event {
	key := fmt.Sprintf("%+v", cfg)
	if v, ok := benchCache.Load(key); ok {
		return v.([]history.Event)
	}
	events, _, s := simulate(cfg)
	if cfg.Inject && !s.Injected {
		b.Fatalf("no double grant injected")
	}
	benchCache.Store(key, events)
	return events
}

func benchCheck(b *testing.B, events []history.Event, opts Options, want Validity) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Check(events, nil, opts)
		if err != nil {
			b.Fatal(err)
		}
		if r.Valid != want {
			b.Fatalf("valid %v, want %v (lock %v resource %v)", r.Valid, want, r.Lock.Valid, r.Resource.Valid)
		}
	}
	b.ReportMetric(float64(len(events)), "events")
}

func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		for _, inject := range []bool{false, true} {
			name := fmt.Sprintf("events=%d/clean", n)
			want := Valid
			if inject {
				name = fmt.Sprintf("events=%d/double-grant", n)
				want = Invalid
			}
			b.Run(name, func(b *testing.B) {
				events := benchHistory(b, simConfig{Seed: 42, Clients: 16, Keys: 4, Events: n, TTLms: 500,
					PInfo: 0.01, PPause: 0.01, Inject: inject})
				benchCheck(b, events, Options{Marks: testMarks}, want)
			})
		}
	}
}

func faultRun(b *testing.B) []history.Event {
	return benchHistory(b, simConfig{Seed: 5, Clients: 16, Keys: 4, Events: 1 << 30, Until: int64(60 * time.Second),
		TTLms: 1000, PInfo: 0.0003, PPause: 0.002, Failovers: 5, FailEvery: int64(10 * time.Second)})
}

// BenchmarkFaultRun judges a fault-shaped history: the verdict with its
// witness, then the same with the porcupine explainer drawn.
func BenchmarkFaultRun(b *testing.B) {
	b.Run("witness", func(b *testing.B) {
		events := faultRun(b)
		benchCheck(b, events, Options{Marks: testMarks}, Invalid)
	})
	b.Run("witness+picture", func(b *testing.B) {
		events := faultRun(b)
		benchCheck(b, events, Options{Marks: testMarks, Pictures: true}, Invalid)
	})
}
