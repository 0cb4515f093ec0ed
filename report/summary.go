package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/marks"
)

// Summary renders a check's result for people: the verdict first, then what
// happened, then every violation in words.
func Summary(r *checker.Result) string {
	var b strings.Builder
	verdictLines(&b, r)
	whatHappened(&b, r)
	figureLines(&b, r)
	violationLines(&b, r)
	return b.String()
}

// verdictLines: the verdict, its warnings, each part's verdict, and the
// findings of liveness and ownership and the keys that are not valid.
func verdictLines(b *strings.Builder, r *checker.Result) {
	switch r.Valid {
	case checker.Valid:
		if r.NotExercised != "" {
			// The exit code stays 0: the run found nothing; it says what it
			// could not have found.
			fmt.Fprintf(b, "VALID: no violation found, but not exercised: %s.\n", r.NotExercised)
		} else {
			b.WriteString("VALID: no violation found.\n")
		}
	case checker.Invalid:
		b.WriteString("INVALID: violations found.\n")
	default:
		b.WriteString("UNKNOWN: the checker ran out of time before reaching a verdict; no violation was found, but this is NOT a pass.\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "  WARNING: %s\n", w)
	}
	fmt.Fprintf(b, "  lock service: %s    resource: %s    liveness: %s    ownership: %s\n", r.Lock.Valid, r.Resource.Valid, r.Liveness.Valid, r.Ownership.Valid)
	for _, o := range append(slices.Clip(r.Ownership.ExpiredOnArrival), r.Ownership.Regranted...) {
		fmt.Fprintf(b, "    %s at %.3f s\n", o.Detail, o.TimeS)
	}
	for _, s := range r.Liveness.StuckLocks {
		fmt.Fprintf(b, "    stuck lock %s since %.3f s, left by client %d's %s (%s), PTTL audit %v\n", s.Key, s.SinceS, s.LeftBy.Client, s.LeftBy.F, s.LeftBy.Outcome, s.Audit)
	}
	if c := cutOffLine(r.Liveness.CutOff); c != "" {
		b.WriteString("    " + c + "\n")
	}
	if o := orphanedLine(r.Ownership.Orphaned); o != "" {
		b.WriteString("    " + o + "\n")
	}
	for _, part := range []struct {
		name string
		keys map[string]*checker.KeyResult
	}{{"lock", r.Lock.Keys}, {"resource", r.Resource.Keys}} {
		names := make([]string, 0, len(part.keys))
		for k := range part.keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			kr := part.keys[k]
			if kr.Valid != checker.Valid {
				fmt.Fprintf(b, "    %s %s: %s, %s (%s checked in %s)\n", part.name, k, kr.Valid, decidedBy(kr), checker.Count(kr.Ops, "op"), checker.HumanDuration(kr.CheckMs))
			}
		}
	}
}

// whatHappened: the run, its faults' coverage, and who held, wrote and was
// turned away.
func whatHappened(b *strings.Builder, r *checker.Result) {
	fmt.Fprintf(b, "\nrun: %s, %s%s\n", checker.HumanDuration(r.DurationMs), checker.Count(r.Failovers, "failover"), closedWords(r.ClosedBySetting))
	if len(r.Coverage) > 0 {
		var cs []string
		for _, c := range r.Coverage {
			cs = append(cs, fmt.Sprintf("%s %d of %d with %s", c.Fault, c.Reached, c.Windows, marks.MomentWords(c.Moment)))
		}
		fmt.Fprintf(b, "coverage (each fault window that reached its dangerous moment): %s\n", strings.Join(cs, "; "))
		b.WriteString(regrantLine(r.FaultWindows))
	} else {
		b.WriteString("coverage: no fault was injected; the verdict covers the workload alone\n")
	}
	b.WriteString(whoHeld(r))
	b.WriteString(whoWrote(r))
	b.WriteString(whoTurnedAway(r))
}

// figureLines: the operations, the latency, the double holders, the stale
// writes and the fence, and the commands a node did not know.
func figureLines(b *strings.Builder, r *checker.Result) {
	var ops []string
	for _, f := range []string{"acquire", "extend", "release", "read", "write"} {
		c := r.Ops[f]
		if c == nil || c.OK+c.Fail+c.Info == 0 {
			continue
		}
		o := fmt.Sprintf("%s %d ok", f, c.OK)
		if c.Refused > 0 {
			o += fmt.Sprintf(" / %d refused by the fence", c.Refused)
		}
		ops = append(ops, o+fmt.Sprintf(" / %d failed / %d unknown", c.Fail-c.Refused, c.Info))
	}
	fmt.Fprintf(b, "ops: %s", strings.Join(ops, "; "))
	fmt.Fprintf(b, "\nacquire latency: p50 %s, p99 %s (%s completed)\n", checker.HumanDuration(r.LatencyMs.Acquire.P50), checker.HumanDuration(r.LatencyMs.Acquire.P99), checker.Count(r.LatencyMs.Acquire.Count, "acquire"))
	fmt.Fprintf(b, "double holders: %d, exposure %s total, %s longest\n", r.DoubleHolders, checker.HumanDuration(r.ExposureMs.Total), checker.HumanDuration(r.ExposureMs.Max))
	sw := r.StaleWrites
	fmt.Fprintf(b, "stale writes (sent by a holder after another client was granted its lock): %d attempted, %d rejected by the fence, %d accepted, %d unknown\n",
		sw.Attempted, sw.Rejected, sw.Accepted, sw.Unknown)
	if n := r.StaleWrites.NewerTurnedAway; n > 0 {
		fmt.Fprintf(b, "the fence turned the NEWER holder away in %s: its fence number was lower than the older holder's (a counter on Valkey set back by a failover or restart, or drawn first by an acquire whose reply came back second), so the older holder kept writing (the weakness %q names: a number kept on Valkey is lost with the primary; one the database issues is not)\n", checker.Count(n, "double holder"), ArticleTitle)
	}
	if n := staleTurnedAway(r); n > 0 {
		fmt.Fprintf(b, "the fence turned the STALE holder away in %s: the numbers came from the database's own sequence, so the newer holder was protected\n", checker.Count(n, "double holder"))
	}
	fmt.Fprintf(b, "fence tokens: %s, %s\n", checker.Count(r.FenceTokens.Duplicates, "duplicate"), checker.Count(r.FenceTokens.Regressions, "regression"))
	for _, u := range r.UnknownCommands {
		var ops []string
		for f, n := range u.Ops {
			ops = append(ops, fmt.Sprintf("%d %s", n, f))
		}
		sort.Strings(ops)
		fmt.Fprintf(b, "unknown command %s: %s failed from %.1f s on because a node did not know the command (an older version or build), not because of the lock; those locks lingered until their TTL\n",
			u.Command, strings.Join(ops, ", "), u.First)
	}
}

// violationLines: the first violation of each kind in full, and the count of
// each.
func violationLines(b *strings.Builder, r *checker.Result) {
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
				fmt.Fprintf(b, "%3d. [%s, %s] %s at %.3f s (cause: %s; %s)\n     %s\n", n, v.Kind, v.Key, clientList(v.Clients, v.Tokens), v.StartS, v.Cause, verdict, v.Explanation)
				if v.Picture != "" {
					fmt.Fprintf(b, "     picture: %s\n", v.Picture)
				}
			}
			counts[v.Kind]++
		}
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
		fmt.Fprintf(b, "     in all: %s\n", strings.Join(parts, ", "))
	}
}

// staleTurnedAway counts the double holders in which numbers from the
// database's sequence protected the newer holder.
func staleTurnedAway(r *checker.Result) int {
	n := 0
	for _, d := range r.DoubleHolderList {
		if d.StalePaid() {
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
			parts[i] += " (" + checker.ShortToken(tokens[i]) + ")"
		}
	}
	return "clients " + strings.Join(parts, " & ")
}

// story is the summary's three sentences without their labels: who held,
// who wrote, who was turned away (index.html shows them).
func story(r *checker.Result) (held, wrote, turnedAway string) {
	cut := func(s string) string {
		s = strings.TrimSuffix(s, "\n")
		if i := strings.Index(s, ": "); i >= 0 {
			s = s[i+2:]
		}
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return cut(whoHeld(r)), cut(whoWrote(r)), cut(whoTurnedAway(r))
}

// decidedBy says how a failed partition's verdict was reached: by direct
// witnesses (porcupine was not needed), or by porcupine.
func decidedBy(kr *checker.KeyResult) string {
	switch {
	case kr.Witnesses > 0 && kr.Porcupine == "skipped":
		return "decided by " + checker.Count(kr.Witnesses, "direct witness") + ", porcupine not needed"
	case kr.Witnesses > 0:
		return "decided by " + checker.Count(kr.Witnesses, "direct witness") + "; porcupine: " + kr.Porcupine
	case kr.Porcupine == "unknown":
		return "porcupine ran out of time"
	}
	return "decided by porcupine (" + kr.Porcupine + ")"
}

// clientSet lists client numbers in order: "client 7", "clients 0, 4 and 7".
func clientSet(set map[int]bool) string {
	cs := make([]int, 0, len(set))
	for c := range set {
		cs = append(cs, c)
	}
	sort.Ints(cs)
	return checker.ClientList(cs)
}

// whoHeld is one sentence: how often the lock was granted, and how often to
// two clients at once.
func whoHeld(r *checker.Result) string {
	grants := 0
	if c := r.Ops["acquire"]; c != nil {
		grants = c.OK
	}
	s := fmt.Sprintf("who held: the lock service granted the lock %s", checker.Count(grants, "time"))
	if r.DoubleHolders == 0 {
		// A double grant whose first holder stopped before the second
		// acted (its extend was refused, or its next write turned away)
		// leaves no moment with two active holders; the sentence must not
		// then say the lock never went to two clients.
		twice, lockFindings := countKind(r.Violations, "double-grant"), 0
		for _, v := range r.Violations {
			if v.Affects == "lock" {
				lockFindings++
			}
		}
		switch {
		case twice > 0:
			return s + fmt.Sprintf("; %s it granted the lock while another client's lease was still alive, though the two never acted as holder at the same moment.\n", checker.Count(twice, "time"))
		case lockFindings > 0:
			// A lease ended early, a grant hidden behind an unknown acquire:
			// the grants it counts do not say how often two overlapped.
			return s + ", and no two clients acted as holder at the same moment (what the lock service did wrong is listed below).\n"
		}
		return s + ", never to two clients at once.\n"
	}
	grantedTwice, expired, revoked := 0, 0, 0
	for _, d := range r.DoubleHolderList {
		switch {
		case d.DoubleGrant:
			grantedTwice++
		case d.Revoked:
			revoked++
		default:
			expired++
		}
	}
	s += fmt.Sprintf("; two clients acted as holder at once %s", checker.Count(r.DoubleHolders, "time"))
	switch {
	case revoked > 0 && grantedTwice == 0 && expired == 0:
		s += ", each time after the server had ended the older holder's session, releasing its lock honestly, before the holder learned of it (not a double grant)"
	case revoked > 0:
		s += fmt.Sprintf(" (%d granted twice, %d after the older lease expired, %d after the server ended the older holder's session)", grantedTwice, expired, revoked)
	case expired == 0:
		s += ", each time granted twice by the lock service"
	case grantedTwice == 0:
		s += ", each time after the older holder's lease had expired (a paused or slow holder, not a double grant)"
	default:
		s += fmt.Sprintf(" (%d granted twice, %d after the older lease expired)", grantedTwice, expired)
	}
	s += fmt.Sprintf(", %s in all", checker.HumanDuration(r.ExposureMs.Total))
	// The violations list one double grant per grant made inside a live
	// lease; a double holder is a moment two clients acted. They differ
	// when the older holder stopped before the newer one acted: an
	// eviction run read "acted as holder at once 82 times" above "in all:
	// double-grant 220", with nothing to say how the two relate.
	if twice := countKind(r.Violations, "double-grant"); twice > grantedTwice {
		s += fmt.Sprintf("; it granted the lock while another client's lease was still alive %s, the other %d with the older holder already stopped (its extend or release refused, or its write turned away) before the newer one acted",
			checker.Count(twice, "time"), twice-grantedTwice)
	}
	return s + ".\n"
}

func countKind(vs []checker.Violation, kind string) int {
	n := 0
	for _, v := range vs {
		if v.Kind == kind {
			n++
		}
	}
	return n
}

// whoWrote is one sentence: whose writes landed, and why a stale one did.
func whoWrote(r *checker.Result) string {
	landed := 0
	if c := r.Ops["write"]; c != nil {
		landed = c.OK
	}
	s := fmt.Sprintf("who wrote: %s landed at the resource", checker.Count(landed, "write"))
	if r.StaleWrites.Accepted == 0 {
		if r.StaleWrites.Attempted > 0 {
			return s + fmt.Sprintf("; none of them a stale holder's (%s tried).\n", checker.Count(r.StaleWrites.Attempted, "stale write"))
		}
		return s + ", every one from the holder of the moment.\n"
	}
	stale := map[int]bool{}
	sided, unfenced, ahead := false, false, false
	for _, d := range r.DoubleHolderList {
		if d.StaleWrite != "accepted" {
			continue
		}
		stale[d.StaleClient] = true
		switch {
		case d.NewTurnedAway != "":
			sided = true
		case d.FenceSource == "":
			unfenced = true
		default:
			ahead = true
		}
	}
	s += fmt.Sprintf("; %d of them came from an older holder (%s) while a newer one held the lock", r.StaleWrites.Accepted, clientSet(stale))
	var why []string
	if sided {
		// Only a failover or a restart sets a newer grant's number back on a
		// lock that takes its number with its grant; with none in the run
		// (a pooler sharing one session among clients), the numbers came
		// apart from the grants, and the sentence says only what was seen.
		if r.Failovers > 0 {
			why = append(why, "the fence sided with the older holder, whose number was higher because a failover or restart set the newer one's back")
		} else {
			why = append(why, "the fence sided with the older holder, whose number was higher than the newer one's")
		}
	}
	if unfenced {
		why = append(why, "no fence checked them")
	}
	if ahead {
		why = append(why, "the older holder's number was still the newest the resource had seen (the newer holder had not yet read or written)")
	}
	if len(why) > 0 {
		s += ": " + strings.Join(why, "; ")
	}
	return s + ".\n"
}

// whoTurnedAway is one sentence: the reads and writes the fence refused,
// and those that failed for another reason.
func whoTurnedAway(r *checker.Result) string {
	var refused, failed []string
	clients := map[int]bool{}
	for _, f := range []string{"read", "write"} {
		c := r.Ops[f]
		if c == nil {
			continue
		}
		if c.Refused > 0 {
			refused = append(refused, checker.Count(c.Refused, f))
		}
		if n := c.Fail - c.Refused; n > 0 {
			failed = append(failed, checker.Count(n, f))
		}
	}
	for _, d := range r.DoubleHolderList {
		if d.NewTurnedAway != "" || d.NewOutranked != "" {
			clients[d.NewClient] = true
		}
		if d.StaleTurnedAway != "" {
			clients[d.StaleClient] = true
		}
	}
	if len(refused) == 0 && len(failed) == 0 {
		return "who was turned away: nobody; the resource refused no read or write.\n"
	}
	s := "who was turned away: "
	if len(refused) > 0 {
		s += strings.Join(refused, " and ") + " refused by the fence (the holder presented a fence number older than one the resource had already seen; not an outage)"
		if len(clients) > 0 {
			s += ", among them " + clientSet(clients) + " in double holders"
		}
	} else {
		s += "the fence refused nothing"
	}
	if len(failed) > 0 {
		s += "; " + strings.Join(failed, " and ") + " failed for another reason (the resource unreachable or an error)"
	}
	return s + ".\n"
}

// closedWords tells, after the failovers, how many times a fault's wait for a
// grant ended at the replication guard's refusal.
func closedWords(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; the replication setting refused the grant a fault waited for %s (closed by the setting)", checker.Count(n, "time"))
}

// cutOffLine is one sentence on the clients that never reached the lock
// service, or nothing.
func cutOffLine(cs []checker.CutOffClient) string {
	if len(cs) == 0 {
		return ""
	}
	ids := make([]int, len(cs))
	n := 0
	for i, c := range cs {
		ids[i] = c.Client
		n += c.Acquires
	}
	first := cs[0].Error
	if first == "" {
		first = "no answer"
	}
	return fmt.Sprintf("cut off: %s never reached the lock service: %s, none granted, none refused for another holder (the first said %q); the run exercised the others only",
		checker.ClientList(ids), checker.Count(n, "acquire")+" failed or went unanswered", first)
}

// orphanedLine sums the orphaned spans (orphaned.go) and names the longest,
// or nothing.
func orphanedLine(spans []checker.OrphanedSpan) string {
	if len(spans) == 0 {
		return ""
	}
	var total float64
	keys := map[string]bool{}
	longest := spans[0]
	refused := 0
	for _, s := range spans {
		total += s.Ms
		refused += s.Refused
		keys[s.Key] = true
		if s.Ms > longest.Ms {
			longest = s
		}
	}
	// A span's LeftBy is never empty (orphaned drops those with none).
	l := longest.LeftBy[0]
	return fmt.Sprintf("orphaned: %s turned away while no client believed it held the key, in %s on %s, %s in all; the longest %s on %s from %.3f s, left by client %d's %s at %.3f s (%s)",
		checker.Count(refused, "acquire"), checker.Count(len(spans), "span"), checker.Count(len(keys), "key"), checker.HumanDuration(total),
		checker.HumanDuration(longest.Ms), longest.Key, longest.StartS, l.Client, l.F, l.TimeS, l.Outcome)
}

// regrantLine is the summary's liveness line under faults: the slowest
// window's regrant, and the windows after which a key never came back.
func regrantLine(ws []checker.FaultWindow) string {
	var worst *checker.FaultWindow
	never, n := 0, 0
	for i := range ws {
		w := &ws[i]
		switch {
		case w.RegrantMs == nil:
		case *w.RegrantMs < 0:
			never++
		default:
			n++
			if worst == nil || *w.RegrantMs > *worst.RegrantMs {
				worst = w
			}
		}
	}
	if worst == nil && never == 0 {
		return ""
	}
	s := "regranted after each fault (every key asked for granted again):"
	if worst != nil {
		s += fmt.Sprintf(" %d window(s), the slowest %s after the %s at %.1fs", n, checker.HumanDuration(*worst.RegrantMs), worst.Fault, worst.StartS)
	}
	if never > 0 {
		s += fmt.Sprintf("; %d window(s) after which a key was never granted again before the run ended", never)
	}
	return s + "\n"
}
