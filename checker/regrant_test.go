package checker

import (
	"testing"
)

func (h *hb) on(key string) *hb { h.key = key; return h }

// A fault window's regrant time is the slowest key's wait, after the fault
// began, for its next grant; a key nobody asked for afterwards does not
// count, and one asked for but never granted again makes it -1.
func TestRegrant(t *testing.T) {
	tests := []struct {
		name string
		h    *hb
		want float64
	}{
		{"refused until the old lease ran out",
			newHB().
				acq(0, "A", 3000, 100, 101, ok, 1).
				nem("kill", "valkey-0", 1000).
				acq(1, "B", 3000, 1100, 1101, fail, 0).
				acq(1, "C", 3000, 3200, 3201, ok, 2),
			2201},
		{"the slowest of two keys",
			newHB().
				nem("kill", "valkey-0", 1000).
				on("a").acq(0, "A", 3000, 1400, 1500, ok, 1).
				on("b").acq(1, "B", 3000, 1100, 1101, fail, 0).
				acq(1, "C", 3000, 2900, 3000, ok, 1),
			2000},
		{"a key held before the fault and not asked for after it does not count",
			newHB().
				on("b").acq(1, "B", 3000, 100, 101, ok, 1).
				nem("kill", "valkey-0", 1000).
				on("a").acq(0, "A", 3000, 1150, 1200, ok, 1),
			200},
		{"asked for and never granted again",
			newHB().
				acq(0, "A", 3000, 100, 101, ok, 1).
				nem("kill", "valkey-0", 1000).
				acq(1, "B", 3000, 1100, 1101, fail, 0).
				acq(1, "C", 3000, 1500, 1501, fail, 0),
			-1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Check(tt.h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.FaultWindows) != 1 {
				t.Fatalf("%d fault windows, want 1: %+v", len(r.FaultWindows), r.FaultWindows)
			}
			if got := r.FaultWindows[0].RegrantMs; got == nil || *got < tt.want-0.01 || *got > tt.want+0.01 {
				t.Errorf("regrant %v ms, want %.0f", got, tt.want)
			}
		})
	}
}
