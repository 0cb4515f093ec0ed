package cluster

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// offsetRE accepts libfaketime's relative offsets: "+120", "-1.5", "+2m", "+1d".
var offsetRE = regexp.MustCompile(`^[+-][0-9]+(\.[0-9]+)?[smhdy]?$`)

// SetClockOffset moves a node's wall clock by offset at run time ("" resets).
// CLOCK_MONOTONIC is left alone. Sentinels also read the wall clock: a jump of
// more than 2 s puts them in TILT mode for 30 s (they log +tilt).
func (l *Local) SetClockOffset(name, offset string) error {
	n, err := l.mustNode(name)
	if err != nil {
		return err
	}
	if !l.cfg.FakeTime {
		return fmt.Errorf("%s was not started under libfaketime: clock faults need a cluster started with clock faults enabled (a clock scenario, or --fake-time)", name)
	}
	if offset == "" {
		offset = "+0"
	}
	if !offsetRE.MatchString(offset) {
		return fmt.Errorf("clock offset %q: want a signed number of seconds such as +120 or -1.5 (suffix m, h, d allowed)", offset)
	}
	if err := l.writeOffset(n, offset); err != nil {
		return err
	}
	l.mu.Lock()
	l.nodes[l.index(name)].ClockOff = offset
	l.mu.Unlock()
	return nil
}

// writeOffset replaces the timestamp file atomically: libfaketime exits the
// server when it reads a half-written file.
func (l *Local) writeOffset(n Node, offset string) error {
	return writeFile(filepath.Join(n.Dir, "faketime.rc"), offset+"\n")
}
