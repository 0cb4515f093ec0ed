package workload

import (
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// BenchmarkHistoryWriter is the runner's side of the stream: typical client
// events appended to history.jsonl with a flush after each (crash safety on).
func BenchmarkHistoryWriter(b *testing.B) {
	w, err := history.Create(filepath.Join(b.TempDir(), "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	tok := lock.NewToken()
	evs := []history.Event{
		{Process: 3, Client: 3, Type: history.Invoke, F: history.FAcquire, Key: "lock:{job-1}", Token: tok, TTLMs: 2000},
		{Process: 3, Client: 3, Type: history.OK, F: history.FAcquire, Key: "lock:{job-1}", Token: tok, Fence: 42},
		{Process: 3, Client: 3, Type: history.OK, F: history.FWrite, Key: "lock:{job-1}", Token: tok, Fence: 42, Value: history.Int64(7), Verdict: history.Accepted},
		{Process: 3, Client: 3, Type: history.OK, F: history.FRelease, Key: "lock:{job-1}", Token: tok},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := evs[i%len(evs)]
		e.Time = truetime.Now()
		if _, err := w.Write(e); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
