// Package runfacts reads facts out of a finished run folder that more than
// one package's end-to-end tests assert on.
package runfacts

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// GrantedLatencies splits a run's granted acquires, invoke to ok, by
// whether they were invoked while fault was in force (between its event and
// its "-healed" event in the nemesis log).
func GrantedLatencies(out, fault string) (inside, outside []time.Duration, err error) {
	nem, err := history.ReadFile(filepath.Join(out, runfolder.Nemesis))
	if err != nil {
		return nil, nil, fmt.Errorf("nemesis log: %w", err)
	}
	var wins [][2]int64
	var open int64 = -1
	for _, e := range nem {
		switch e.F {
		case fault:
			open = e.Time
		case fault + "-healed":
			if open >= 0 {
				wins = append(wins, [2]int64{open, e.Time})
				open = -1
			}
		}
	}
	h, err := history.ReadFile(filepath.Join(out, runfolder.History))
	if err != nil {
		return nil, nil, fmt.Errorf("history: %w", err)
	}
	invoked := map[string]int64{}
	for _, e := range h {
		if e.F != history.FAcquire {
			continue
		}
		switch e.Type {
		case history.Invoke:
			invoked[e.Token] = e.Time
		case history.OK:
			at, ok := invoked[e.Token]
			if !ok {
				continue
			}
			in := slices.ContainsFunc(wins, func(w [2]int64) bool { return at >= w[0] && at <= w[1] })
			if in {
				inside = append(inside, time.Duration(e.Time-at))
			} else {
				outside = append(outside, time.Duration(e.Time-at))
			}
		}
	}
	return inside, outside, nil
}

// Median is the median of ds (the upper one of an even count); 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
