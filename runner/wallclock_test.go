package runner

import (
	"testing"
	"time"
)

// The warning's threshold: NTP's largest slew (500 ppm) over the run, plus
// 20 ms of reading noise. A 2-minute run warns above 80 ms; the 330 ms by
// which a lease ended early in the unexplained CI double grant would show.
func TestWallStepNoted(t *testing.T) {
	for _, tc := range []struct {
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 20 * time.Millisecond},
		{20 * time.Second, 30 * time.Millisecond},
		{2 * time.Minute, 80 * time.Millisecond},
	} {
		if got := time.Duration(wallStepNoted(tc.elapsed)); got != tc.want {
			t.Errorf("wallStepNoted(%v) = %v, want %v", tc.elapsed, got, tc.want)
		}
	}
}
