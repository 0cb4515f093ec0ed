package main

import (
	"math"
	"testing"
)

// TestPhysicalLimit: the cores' CPU bounds the rate when the clients cost
// most; the server's one thread does when it costs most.
func TestPhysicalLimit(t *testing.T) {
	for _, tt := range []struct {
		name               string
		cores              int
		clientUs, serverUs float64
		want               float64
	}{
		{"clients dominate: 2 cores over 100 us", 2, 80, 20, 20000},
		{"the server's thread dominates", 8, 10, 90, 1e6 / 90},
		{"one core", 1, 30, 20, 20000},
		{"nothing measured", 2, 0, 0, 0},
	} {
		if got := physicalLimit(tt.cores, tt.clientUs, tt.serverUs); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
