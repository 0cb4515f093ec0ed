// Package stats holds the one percentile every figure of lockjepsen uses.
package stats

import (
	"cmp"
	"math"
)

// Percentile is the nearest-rank percentile (p in [0,1]) of sorted values:
// the smallest value with at least p of the data at or below it. Nearest rank
// always returns an observed value, so a sweep's p99 of one trial equals that
// trial's results.json, and a median of seeds is one seed's figure. The zero
// value when sorted is empty; callers that must tell "no data" apart check
// the length first.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
