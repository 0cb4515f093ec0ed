// Package truetime is the one clock every lockjepsen event is stamped with.
//
// CLOCK_MONOTONIC is shared by every process (and every container) on one kernel,
// and neither libfaketime (run with FAKETIME_DONT_FAKE_MONOTONIC=1) nor a client's
// skewed decision clock touches it, so timestamps from different processes can be
// merged into one history and compared directly.
package truetime

import (
	"golang.org/x/sys/unix"
)

// Now returns nanoseconds of CLOCK_MONOTONIC.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC cannot fail on Linux; a panic beats silently wrong times.
		panic("truetime: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}
