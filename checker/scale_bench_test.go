package checker

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// BenchmarkCheck1M checks scripts/check-scale.sh's 1M-event history the way
// `lockjepsen check` does: history.Scan into a Builder, the resource log into
// an AttemptIndex, CheckHistory. It reports the live heap the check keeps
// (the History after a GC) next to the time; the whole command's wall time
// and peak RSS are scripts/check-scale.sh's.
//
//	go test ./checker -run XXX -bench Check1M -benchtime 1x
func BenchmarkCheck1M(b *testing.B) {
	dir := b.TempDir()
	if err := writeSample(dir, scaleConfig(1_000_000), true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, res := checkFile(b, dir)
		if res.Valid != Valid {
			b.Fatalf("valid %v, want valid", res.Valid)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
		b.ReportMetric(float64(h.Len()), "events")
		runtime.KeepAlive(h)
		b.StartTimer()
	}
}

func checkFile(b *testing.B, dir string) (*History, *Result) {
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	bd := NewBuilder()
	if st, err := f.Stat(); err == nil {
		bd.Grow(int(st.Size() / 350))
	}
	if err := history.Scan(f, f.Name(), bd.Add); err != nil {
		b.Fatal(err)
	}
	idx, err := IndexAttemptsFile(filepath.Join(dir, "resource.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	h := bd.History()
	return h, CheckHistory(h, idx, Options{Marks: testMarks})
}
