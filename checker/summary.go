package checker

import (
	"fmt"
	"sort"
	"strings"
)

// Summary renders the result for people: the verdict first, then what
// happened, then every violation in words.
func (r *Result) Summary() string {
	var b strings.Builder
	switch r.Valid {
	case Valid:
		b.WriteString("VALID: no violation found.\n")
	case Invalid:
		b.WriteString("INVALID: violations found.\n")
	default:
		b.WriteString("UNKNOWN: the checker ran out of time before reaching a verdict; no violation was found, but this is NOT a pass.\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  WARNING: %s\n", w)
	}
	fmt.Fprintf(&b, "  lock service: %s    resource: %s    liveness: %s\n", r.Lock.Valid, r.Resource.Valid, r.Liveness.Valid)
	for _, s := range r.Liveness.StuckLocks {
		fmt.Fprintf(&b, "    stuck lock %s since %.3f s, left by client %d's %s (%s), PTTL audit %v\n", s.Key, s.SinceS, s.LeftBy.Client, s.LeftBy.F, s.LeftBy.Outcome, s.Audit)
	}
	for _, part := range []struct {
		name string
		keys map[string]*KeyResult
	}{{"lock", r.Lock.Keys}, {"resource", r.Resource.Keys}} {
		names := make([]string, 0, len(part.keys))
		for k := range part.keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			kr := part.keys[k]
			if kr.Valid != Valid {
				fmt.Fprintf(&b, "    %s %s: %s (porcupine %s, %d direct witnesses, %d ops, %.0f ms)\n", part.name, k, kr.Valid, kr.Porcupine, kr.Witnesses, kr.Ops, kr.CheckMs)
			}
		}
	}
	fmt.Fprintf(&b, "\nrun: %.1f s, %d failovers\n", r.DurationMs/1000, r.Failovers)
	fmt.Fprintf(&b, "ops:")
	for _, f := range []string{"acquire", "extend", "release", "read", "write"} {
		if c := r.Ops[f]; c != nil && c.OK+c.Fail+c.Info > 0 {
			fmt.Fprintf(&b, "  %s %d ok / %d fail / %d info", f, c.OK, c.Fail, c.Info)
		}
	}
	fmt.Fprintf(&b, "\nacquire latency: p50 %.2f ms, p99 %.2f ms (%d completed)\n", r.LatencyMs.Acquire.P50, r.LatencyMs.Acquire.P99, r.LatencyMs.Acquire.Count)
	fmt.Fprintf(&b, "double holders: %d, exposure %.0f ms total, %.0f ms longest\n", r.DoubleHolders, r.ExposureMs.Total, r.ExposureMs.Max)
	fmt.Fprintf(&b, "stale writes: %d attempted, %d rejected, %d accepted, %d unknown\n",
		r.StaleWrites.Attempted, r.StaleWrites.Rejected, r.StaleWrites.Accepted, r.StaleWrites.Unknown)
	if n := r.StaleWrites.NewerTurnedAway; n > 0 {
		fmt.Fprintf(&b, "the fence turned the NEWER holder away in %d double holder(s): its fence number was set back by the failover, so the older holder kept writing\n", n)
	}
	if n := staleTurnedAway(r); n > 0 {
		fmt.Fprintf(&b, "the fence turned the STALE holder away in %d double holder(s): the numbers came from the database's own sequence, so the newer holder was protected\n", n)
	}
	fmt.Fprintf(&b, "fence tokens: %d duplicates, %d regressions\n", r.FenceTokens.Duplicates, r.FenceTokens.Regressions)
	for _, u := range r.UnknownCommands {
		var ops []string
		for f, n := range u.Ops {
			ops = append(ops, fmt.Sprintf("%d %s", n, f))
		}
		sort.Strings(ops)
		fmt.Fprintf(&b, "unknown command %s: %s failed from %.1f s on because a node did not know the command (an older version or build), not because of the lock; those locks lingered until their TTL\n",
			u.Command, strings.Join(ops, ", "), u.First)
	}
	if len(r.Violations) > 0 {
		// The first violation of each kind in full; a failover that hands a
		// lock out a hundred times is one story, not a hundred.
		b.WriteString("\nviolations (the first of each kind; all of them are in results.json):\n")
		counts := map[string]int{}
		var kinds []string
		n := 0
		for _, v := range r.Violations {
			if counts[v.Kind] == 0 {
				kinds = append(kinds, v.Kind)
				n++
				verdict := "counts against the " + v.Affects
				if v.Affects == "none" {
					verdict = "reported, does not change the verdict"
				}
				fmt.Fprintf(&b, "%3d. [%s, %s] %s at %.3f s (cause: %s; %s)\n     %s\n", n, v.Kind, v.Key, clientList(v.Clients, v.Tokens), v.StartS, v.Cause, verdict, v.Explanation)
				if v.Picture != "" {
					fmt.Fprintf(&b, "     picture: %s\n", v.Picture)
				}
			}
			counts[v.Kind]++
		}
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
		fmt.Fprintf(&b, "     in all: %s\n", strings.Join(parts, ", "))
	}
	return b.String()
}

// staleTurnedAway counts the double holders in which numbers from the
// database's sequence protected the newer holder.
func staleTurnedAway(r *Result) int {
	n := 0
	for _, d := range r.DoubleHolderList {
		if stalePaid(d) {
			n++
		}
	}
	return n
}

// clientList names the clients of a violation, with their tokens when one
// client appears twice.
func clientList(cs []int, tokens []string) string {
	if len(cs) == 0 {
		return "clients ?"
	}
	dup := len(cs) == 2 && cs[0] == cs[1] && len(tokens) == 2
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprint(c)
		if dup {
			parts[i] += " (" + shortToken(tokens[i]) + ")"
		}
	}
	return "clients " + strings.Join(parts, " & ")
}
