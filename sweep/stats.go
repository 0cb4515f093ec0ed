package sweep

import (
	"math"
	"sort"

	"github.com/lockjepsen/lockjepsen/internal/stats"
)

// Z95 is the standard normal quantile for a two-sided 95% interval.
const Z95 = 1.959963984540054

// Wilson returns the Wilson score interval for k successes in n trials at
// normal quantile z. Wilson rather than the textbook p ± z·sqrt(p(1-p)/n):
// the sweep's counts are small and often 0 or n, where the textbook interval
// collapses to a zero-width [0,0] or [1,1] and claims a certainty 20 failovers
// cannot give. With n = 0 nothing is known: [0, 1].
func Wilson(k, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = max(0, min(k, n))
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = center-half, center+half
	// Exact bounds at the edges, so 0/n reports 0 and n/n reports 1 without
	// rounding noise.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return max(0, lo), min(1, hi)
}

// Dist summarises a sample: count, p50, p99, max (0 when empty, so JSON and
// CSV never carry NaN).
type Dist struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Summarize sorts xs in place and returns its Dist. Its percentiles are
// nearest rank, as the checker's latency figures, so a sweep's p99 of one
// trial equals that trial's results.json.
func Summarize(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	sort.Float64s(xs)
	return Dist{Count: len(xs), P50: stats.Percentile(xs, 0.50), P99: stats.Percentile(xs, 0.99), Max: xs[len(xs)-1]}
}
