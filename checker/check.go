// Package checker decides whether a lockjepsen history shows a broken lock: a
// lock service that no correct lease server could be, a resource whose
// critical sections did not run one at a time, clients that held a lock
// together, and what the fence made of it. docs/checker.md describes the
// verdicts and every key of the result.
package checker

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// Check judges a history (history.jsonl) and the resource's own log
// (resource.jsonl; nil when absent). It returns an error only when the history
// cannot be checked at all, e.g. a completion without an invoke.
// With opts.Pictures it also gathers what porcupine needs to draw each failed
// partition (Result.Pictures); report draws them.
func Check(events []history.Event, attempts []history.Attempt, opts Options) (*Result, error) {
	b := NewBuilder()
	for i := range events {
		if err := b.Add(&events[i]); err != nil {
			return nil, fmt.Errorf("malformed history: %w", err)
		}
	}
	var idx *AttemptIndex
	if len(attempts) > 0 {
		idx = NewAttemptIndex()
		for i := range attempts {
			idx.Add(&attempts[i])
		}
	}
	return CheckHistory(b.History(), idx, opts), nil
}

// CheckHistory judges a history a Builder gathered, with the resource's own
// log (nil when absent); Check without the events.
func CheckHistory(h *History, idx *AttemptIndex, opts Options) *Result {
	began := time.Now()
	opts = opts.Defaults()
	ops, nem, t0, tEnd := h.ops, h.nem, h.t0, h.tEnd
	fs := faults(nem)
	res := &Result{
		Ops:                opCounts(ops),
		UnknownCommands:    unknownCommands(ops, t0),
		LatencyMs:          Latency{Acquire: latency(ops, history.FAcquire)},
		Options:            OptionsEcho{EpsilonMs: ms(opts.Epsilon), BudgetS: opts.Budget.Seconds()},
		StartTime:          t0,
		DurationMs:         float64(tEnd-t0) / 1e6,
		ResourceLogChecked: idx != nil,
		Violations:         []Violation{},
		Visualizations:     []string{},
		DoubleHolderList:   []DoubleHolder{},
		FenceTokens:        FenceTokens{List: []FenceIssue{}},
	}
	for _, e := range nem {
		if e.F == history.NFailover {
			res.Failovers++
		}
	}
	var slack int64
	minTTL := int64(never)
	for i := range ops {
		slack = max(slack, ops[i].TTL)
		if ops[i].TTL > 0 {
			minTTL = min(minTTL, ops[i].TTL)
		}
	}
	res.Warnings = epsilonWarnings(opts.Epsilon, minTTL)

	lockOps, lockKeys := byKey(ops, isLockOp)
	secs := buildSections(ops, idx)
	secByKey := make(map[string][]*Section)
	var secKeys []string
	for _, s := range secs {
		if secByKey[s.Key] == nil {
			secKeys = append(secKeys, s.Key)
		}
		secByKey[s.Key] = append(secByKey[s.Key], s)
	}
	sort.Strings(secKeys)
	res.Resource.Sections = len(secs)

	draw := opts.Pictures
	lockChecks := make([]*keyCheck, len(lockKeys))
	resChecks := make([]*keyCheck, len(secKeys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	run := func(f func()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() { defer func() { <-sem; wg.Done() }(); f() }()
	}
	for i, k := range lockKeys {
		run(func() { lockChecks[i] = checkLockKey(k, lockOps[k], opts, t0, draw) })
	}
	for i, k := range secKeys {
		run(func() { resChecks[i] = checkResourceKey(k, secByKey[k], opts, draw) })
	}
	wg.Wait()

	res.Lock = LockResult{Valid: Valid, Keys: make(map[string]*KeyResult)}
	grants := make(map[[2]string]bool)
	for _, kc := range lockChecks {
		res.Lock.Keys[kc.key] = &kc.res
		res.Lock.Valid = and(res.Lock.Valid, kc.res.Valid)
		for _, w := range kc.witnesses {
			v := Violation{Kind: w.kind, Affects: "lock", Key: w.key, Start: w.start, End: w.end,
				Clients: []int{w.holder.grant.Client, w.op.Client}, Tokens: []string{w.holder.token, w.op.Token},
				Events: []int64{w.holder.grant.InvokeIndex, w.op.InvokeIndex}}
			dg := w.kind == "double-grant"
			if dg {
				grants[[2]string{w.holder.token, w.op.Token}] = true
			}
			v.Cause, v.Faults = attribute(fs, w.holder.grant.Call, w.end, slack, v.Clients, dg)
			v.Explanation = explainWitness(w, t0, v.Cause, v.Faults)
			res.Violations = append(res.Violations, v)
		}
		if kc.res.Porcupine == "illegal" {
			v := Violation{Kind: "lock-not-linearizable", Affects: "lock", Key: kc.key, Start: kc.segFrom, End: kc.segTo,
				Clients: []int{}, Explanation: explainStuckLock(kc.key, kc.stuck, kc.segFrom, kc.segTo, t0)}
			if o := kc.stuck; o != nil {
				// The violation starts at the reply no server could give,
				// not at the start of the span porcupine checked.
				v.Start, v.End = o.Call, o.Return
				if v.End == never {
					v.End = max(o.Done, o.Call)
				}
				v.Clients = []int{o.Client}
				v.Tokens = []string{o.Token}
				v.Events = []int64{o.InvokeIndex}
				v.Cause, v.Faults = attribute(fs, kc.segFrom, v.End, slack, nil, true)
			}
			res.Violations = append(res.Violations, v)
		}
	}
	res.Resource.Valid = Valid
	res.Resource.Keys = make(map[string]*KeyResult)
	for _, kc := range resChecks {
		res.Resource.Keys[kc.key] = &kc.res
		res.Resource.Valid = and(res.Resource.Valid, kc.res.Valid)
		res.Resource.LostUpdates += len(kc.lost)
		for _, p := range kc.lost {
			a, b := p[0], p[1]
			v := Violation{Kind: "lost-update", Affects: "resource", Key: kc.key, Start: max(a.Call, b.Call),
				End: min(a.Return, b.Return), Clients: []int{a.Client, b.Client}, Tokens: []string{a.Token, b.Token},
				Events: []int64{a.Write.InvokeIndex, b.Write.InvokeIndex}, Explanation: explainLostUpdate(kc.key, a, b)}
			if v.End == never {
				v.End = v.Start
			}
			v.Cause, v.Faults = attribute(fs, min(a.Call, b.Call), v.End, slack, v.Clients, false)
			res.Violations = append(res.Violations, v)
		}
		if kc.res.Porcupine == "illegal" {
			v := Violation{Kind: "resource-not-linearizable", Affects: "resource", Key: kc.key, Start: kc.segFrom,
				End: kc.segTo, Clients: []int{}, Explanation: explainStuckResource(kc.key, kc.stuckS, kc.segFrom, kc.segTo, t0)}
			if kc.stuckS != nil {
				v.Clients = []int{kc.stuckS.Client}
			}
			v.Cause, v.Faults = attribute(fs, kc.segFrom, kc.segTo, slack, v.Clients, false)
			res.Violations = append(res.Violations, v)
		}
	}

	dhs, sw, exp := doubleHolders(ops, fs, idx, grants, slack)
	for i := range dhs {
		dhs[i].Explanation = explainDoubleHolder(dhs[i], t0)
		d := dhs[i]
		kind := "stale-write-accepted"
		if d.NewTurnedAway != "" {
			// The older holder's writes landed because the fence sided with
			// it: the newer holder, carrying a set-back number, was refused.
			kind = "newer-holder-turned-away"
			sw.NewerTurnedAway++
		}
		if stalePaid(d) {
			// Numbers from the database's sequence: the stale holder was the
			// one turned away, and the newer holder the lock chose was protected.
			kind = "stale-holder-turned-away"
		}
		if d.StaleWrite == history.Accepted || d.NewTurnedAway != "" || kind == "stale-holder-turned-away" {
			res.Violations = append(res.Violations, Violation{Kind: kind, Affects: "none", Key: d.Key,
				Start: d.Start, End: d.End, Clients: []int{d.StaleClient, d.NewClient}, Tokens: []string{d.StaleToken, d.NewToken},
				Cause: d.Cause, Faults: d.Faults, Explanation: d.Explanation})
		}
	}
	res.DoubleHolders, res.DoubleHolderList, res.StaleWrites, res.ExposureMs = len(dhs), dhs, sw, exp
	if dhs == nil {
		res.DoubleHolderList = []DoubleHolder{}
	}

	fenceOps, fenceKeys := byKey(ops, func(o *Op) bool { return isLockOp(o) || o.F == history.FFence })
	res.FenceTokens = fenceIssues(fenceOps, fenceKeys)
	if res.FenceTokens.List == nil {
		res.FenceTokens.List = []FenceIssue{}
	}
	for _, f := range res.FenceTokens.List {
		kind := "duplicate-fence"
		if f.Kind == "regression" {
			kind = "fence-regression"
		}
		v := Violation{Kind: kind, Affects: "none", Key: f.Key, Start: f.Time, End: f.Time, Clients: f.Clients,
			Explanation: explainFence(f)}
		v.Cause, v.Faults = attribute(fs, f.Time-slack, f.Time, slack, nil, true)
		res.Violations = append(res.Violations, v)
	}

	var stuck []Violation
	res.Liveness, stuck = liveness(lockOps, lockKeys, nem, t0)
	res.Violations = append(res.Violations, stuck...)
	res.Valid = and(res.Lock.Valid, res.Resource.Valid, res.Liveness.Valid)
	sort.SliceStable(res.Violations, func(i, j int) bool { return res.Violations[i].Start < res.Violations[j].Start })
	for i := range res.Violations {
		res.Violations[i].StartS = rel(res.Violations[i].Start, t0)
		res.Violations[i].EndS = rel(res.Violations[i].End, t0)
	}
	if draw {
		res.Pictures = pictures(lockChecks, resChecks, fs, t0)
	}
	res.CheckMs = ms(time.Since(began))
	return res
}

// epsilonWarnings states the ε policy: a negative ε narrows the lease bounds
// below what a correct server guarantees (false alarms), and an ε of half the
// shortest lease or more leaves a certain interval of at most half a lease
// (none at all from ε ≥ ttl), so double grants go unseen and VALID means
// little.
func epsilonWarnings(eps time.Duration, minTTL int64) []string {
	switch {
	case eps < 0:
		return []string{fmt.Sprintf("epsilon %v is negative: lease bounds are narrower than a correct server guarantees, so legal histories may be judged invalid", eps)}
	case minTTL != never && int64(eps) >= minTTL/2:
		return []string{fmt.Sprintf("epsilon %v is at least half the shortest lease (%v): a lease is certain for at most half its length, so double grants go unseen; a VALID verdict proves little (use an epsilon well below TTL/2)",
			eps, time.Duration(minTTL))}
	}
	return nil
}
