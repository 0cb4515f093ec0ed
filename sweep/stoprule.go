package sweep

// The stopping rule: how many trials a cell runs, and when an adaptive plan
// has enough of them (docs/sweep.md, the stopping rule).

// Adaptive reports whether the plan adds trials beyond Trials.
func (p Plan) Adaptive() bool { return p.MinFailovers > 0 || p.UntilCI > 0 }

// ZeroHitBound is the --until-ci rule for a cell with no hit: its upper bound below this (Below, or UntilCI).
func (p Plan) ZeroHitBound() float64 {
	if p.Below > 0 {
		return p.Below
	}
	return p.UntilCI
}

// Enough reports whether a cell with these counts needs no more trials under
// the plan's stopping rules (always true for a plan without one). A shard
// judges its own counts scaled by the number of shards: the other shards run
// the same number of trials of the cell on the same seeds' neighbours, so the
// merged cell meets the rule about as well (merge reports the real widths).
func (p Plan) Enough(hits, opps int) bool {
	if p.Shard != nil && p.Shard.Count > 1 {
		hits, opps = hits*p.Shard.Count, opps*p.Shard.Count
	}
	if p.MinFailovers > 0 && opps < p.MinFailovers {
		return false
	}
	if p.UntilCI > 0 {
		lo, hi := Wilson(hits, opps, Z95)
		if opps == 0 {
			return false
		}
		if hits == 0 && hi >= p.ZeroHitBound() || hits > 0 && hi-lo >= p.UntilCI {
			return false
		}
	}
	return true
}

// OpportunitiesFor is how many opportunities a cell needs under the --until-ci
// rule when its hits are 0 (the Below bound) and at p = 1/2 (the widest
// interval); 0 without the rule.
func (p Plan) OpportunitiesFor() (zeroHits, half int) {
	if p.UntilCI <= 0 {
		return 0, 0
	}
	for n := 1; n < 1_000_000; n++ {
		if _, hi := Wilson(0, n, Z95); zeroHits == 0 && hi < p.ZeroHitBound() {
			zeroHits = n
		}
		if lo, hi := Wilson(n/2, n, Z95); half == 0 && hi-lo < p.UntilCI {
			half = n
		}
		if zeroHits > 0 && half > 0 {
			break
		}
	}
	return zeroHits, half
}
