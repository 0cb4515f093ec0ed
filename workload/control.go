package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Control is a line the runner sends a running client.
//
//	{"clock_offset_ms": 1500, "clock_rate": 1.0}   skew the decision clock
//	{"stop": true}                                 finish the current cycle, release, exit
//
// EOF on stdin means stop too, so a runner that dies stops its clients.
type Control struct {
	ClockOffsetMs *float64 `json:"clock_offset_ms,omitempty"`
	ClockRate     *float64 `json:"clock_rate,omitempty"`
	Stop          bool     `json:"stop,omitempty"`
}

// readControls applies control lines until EOF or a stop, then calls stop.
func readControls(sc *bufio.Scanner, clock *Clock, stop func(), logf func(string, ...any), extra func([]byte)) {
	defer stop()
	var offset time.Duration
	rate := 0.0
	for sc.Scan() {
		var c Control
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			logf("ignoring control line %q: %v", sc.Text(), err)
			continue
		}
		if c.Stop {
			return
		}
		if c.ClockOffsetMs != nil || c.ClockRate != nil {
			if c.ClockOffsetMs != nil {
				offset = time.Duration(*c.ClockOffsetMs * float64(time.Millisecond))
			}
			if c.ClockRate != nil {
				rate = *c.ClockRate
			}
			clock.Set(offset, rate)
		}
		if extra != nil {
			extra(sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		logf("control stream: %v", err)
	}
}

func clockLine(offset time.Duration, rate float64) ([]byte, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("clock rate %v: want > 0", rate)
	}
	o := float64(offset) / float64(time.Millisecond)
	b, err := json.Marshal(Control{ClockOffsetMs: &o, ClockRate: &rate})
	if err != nil {
		return nil, fmt.Errorf("encode clock control: %w", err)
	}
	return append(b, '\n'), nil
}
