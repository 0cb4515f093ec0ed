package truetime

import "testing"

// Now reads the same clock as clock_gettime(CLOCK_MONOTONIC), the clock every
// other process on the kernel (clients, the runner, an exec adapter in
// another language) stamps its events with: a reading taken between two
// system-call readings lies between them.
func TestNowIsClockMonotonic(t *testing.T) {
	for i := 0; i < 1000; i++ {
		before := syscallNow()
		now := Now()
		after := syscallNow()
		if now < before || now > after {
			t.Fatalf("Now() = %d, outside the clock_gettime readings around it [%d, %d]", now, before, after)
		}
	}
}

func BenchmarkNow(b *testing.B) {
	b.Run("vdso", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Now()
		}
	})
	b.Run("syscall", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			syscallNow()
		}
	})
}
