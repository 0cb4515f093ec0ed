package stats

import (
	"testing"
	"time"
)

// Nearest-rank examples from the definition (Wikipedia, "Percentile",
// nearest-rank method).
func TestPercentileKnownValues(t *testing.T) {
	xs := []float64{15, 20, 35, 40, 50}
	ys := []float64{3, 6, 7, 8, 8, 10, 13, 15, 16, 20}
	big := make([]int64, 1000)
	for i := range big {
		big[i] = int64(i + 1)
	}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"5: p5", Percentile(xs, 0.05), 15},
		{"5: p30", Percentile(xs, 0.30), 20},
		{"5: p40", Percentile(xs, 0.40), 20},
		{"5: p50", Percentile(xs, 0.50), 35},
		{"5: p100", Percentile(xs, 1), 50},
		{"10: p25", Percentile(ys, 0.25), 7},
		{"10: p50", Percentile(ys, 0.50), 8},
		{"10: p75", Percentile(ys, 0.75), 15},
		{"10: p100", Percentile(ys, 1), 20},
		{"10: p0", Percentile(ys, 0), 3},
		{"1000: p99", float64(Percentile(big, 0.99)), 990},
		{"100: p99", float64(Percentile(big[:100], 0.99)), 99},
		{"even: p50 is the lower middle", float64(Percentile([]int{1, 2, 3, 4}, 0.5)), 2},
		{"empty", Percentile([]float64(nil), 0.5), 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if got := Percentile([]time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, 0.5); got != 2*time.Second {
		t.Errorf("durations: p50 %v", got)
	}
}
