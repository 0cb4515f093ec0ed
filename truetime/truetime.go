// Package truetime is the one clock every lockjepsen event is stamped with.
//
// CLOCK_MONOTONIC is shared by every process (and every container) on one kernel,
// and neither libfaketime (run with FAKETIME_DONT_FAKE_MONOTONIC=1) nor a client's
// skewed decision clock touches it, so timestamps from different processes can be
// merged into one history and compared directly.
package truetime

import (
	_ "unsafe" // go:linkname

	"golang.org/x/sys/unix"
)

// nanotime is the Go runtime's CLOCK_MONOTONIC reading, read through the vDSO
// (runtime/sys_linux_*.s): the same clock and scale as clock_gettime(2), but
// no system call. unix.ClockGettime is a real one: 580-1,900 ns against
// 120-170 (BenchmarkNow on the shared 2-core machine), and a client reads the
// clock about ten times a lock cycle; each system call also woke the Go
// runtime's sysmon thread (a futex) in an idle client. The runtime keeps this name linkable on purpose (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns nanoseconds of CLOCK_MONOTONIC.
func Now() int64 { return nanotime() }

// syscallNow is clock_gettime(CLOCK_MONOTONIC) as a system call, which Now
// must agree with (TestNowIsClockMonotonic).
func syscallNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC cannot fail on Linux; a panic beats silently wrong times.
		panic("truetime: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}
