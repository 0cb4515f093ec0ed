package runner

import (
	"github.com/lockjepsen/lockjepsen/checker"
)

// Reproduced reports whether a run showed what its scenario teaches. The
// end-to-end tests and `lockjepsen bench scenario` (the reproduction rate) use
// it; the README's claims come from the same predicates.
func Reproduced(cfg Config, r *checker.Result) bool {
	fenced := cfg.Fence != "none"
	grantBy := func(cause string) bool {
		for _, v := range r.Violations {
			if v.Kind == "double-grant" && v.Cause == cause {
				return true
			}
		}
		return false
	}
	turnedAway := r.StaleWrites.Rejected > 0
	for _, d := range r.DoubleHolderList {
		if d.NewTurnedAway != "" {
			turnedAway = true
		}
	}
	switch cfg.Scenario {
	case "baseline":
		return r.Valid == checker.Valid
	case "failover-race":
		if r.Lock.Valid != checker.Invalid || !grantBy("failover") {
			return false
		}
		if fenced {
			return r.Resource.Valid == checker.Valid && turnedAway
		}
		return r.Resource.Valid == checker.Invalid
	case "fast-restart":
		return r.Lock.Valid == checker.Invalid
	case "split-brain":
		return r.Lock.Valid == checker.Invalid
	case "clock-jump":
		return r.Lock.Valid == checker.Invalid && grantBy("server-clock")
	case "paused-client", "client-clock-skew":
		if cfg.Recipe == "unsafe" {
			return r.Lock.Valid == checker.Invalid
		}
		if fenced {
			return r.Lock.Valid == checker.Valid && r.Resource.Valid == checker.Valid && turnedAway
		}
		return r.Lock.Valid == checker.Valid && r.Resource.Valid == checker.Invalid
	}
	return r.Valid != checker.Unknown
}

// FirstViolationS is the time of the first violation that falsifies a
// verdict, in seconds since the first event; -1 when there is none.
func FirstViolationS(r *checker.Result) float64 {
	for _, v := range r.Violations {
		if v.Affects != "none" {
			return v.StartS
		}
	}
	return -1
}
