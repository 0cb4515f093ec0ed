package sweep

import (
	"math"
	"testing"
)

// Reference values: Wilson score intervals at 95% as published (e.g. Newcombe
// 1998, Table I; Brown, Cai & DasGupta 2001), to four decimals.
func TestWilsonKnownValues(t *testing.T) {
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.2775},
		{5, 10, 0.2366, 0.7634},
		{10, 10, 0.7225, 1},
		{1, 29, 0.0061, 0.1718},   // Newcombe example 1/29
		{15, 148, 0.0624, 0.1605}, // Newcombe example 15/148
		{81, 263, 0.2553, 0.3662}, // Newcombe example 81/263
		{0, 20, 0, 0.1611},
		{20, 20, 0.8389, 1},
	}
	for _, c := range cases {
		lo, hi := Wilson(c.k, c.n, Z95)
		if math.Abs(lo-c.lo) > 5e-5 || math.Abs(hi-c.hi) > 5e-5 {
			t.Errorf("Wilson(%d/%d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestWilsonEdges(t *testing.T) {
	if lo, hi := Wilson(0, 0, Z95); lo != 0 || hi != 1 {
		t.Errorf("Wilson(0/0) = [%v, %v], want [0, 1]: nothing observed, nothing known", lo, hi)
	}
	// More successes than trials (a caller's bug) is clamped, never NaN.
	if lo, hi := Wilson(7, 5, Z95); math.IsNaN(lo) || hi != 1 {
		t.Errorf("Wilson(7/5) = [%v, %v]", lo, hi)
	}
	// The interval always contains the point estimate and narrows with n.
	prev := 1.0
	for _, n := range []int{10, 40, 160, 640} {
		lo, hi := Wilson(n/4, n, Z95)
		if lo > 0.25 || hi < 0.25 {
			t.Errorf("Wilson(%d/%d) = [%v, %v] misses 0.25", n/4, n, lo, hi)
		}
		if hi-lo >= prev {
			t.Errorf("width at n=%d is %v, not below %v", n, hi-lo, prev)
		}
		prev = hi - lo
	}
}

// Summarize's percentiles are nearest rank (internal/stats).
func TestSummarize(t *testing.T) {
	d := Summarize([]float64{50, 15, 40, 20, 35})
	if d != (Dist{Count: 5, P50: 35, P99: 50, Max: 50}) {
		t.Errorf("Summarize = %+v", d)
	}
	if Summarize(nil) != (Dist{}) {
		t.Error("Summarize(nil) must be the zero Dist")
	}
}
