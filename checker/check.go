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

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Check judges a history (history.jsonl) and the resource's own log
// (resource.jsonl; nil when absent). It returns an error only when the history
// cannot be checked at all, e.g. a completion without an invoke.
// Visualisations are written to opts.Dir when it is set.
func Check(events []history.Event, attempts []history.Attempt, opts Options) (*Result, error) {
	began := time.Now()
	opts = opts.Defaults()
	ops, nem, err := splitHistory(events)
	if err != nil {
		return nil, fmt.Errorf("malformed history: %w", err)
	}
	var t0, tEnd int64
	if len(events) > 0 {
		t0, tEnd = events[0].Time, events[len(events)-1].Time
	}
	fs := faults(nem)
	var idx attemptIndex
	if len(attempts) > 0 {
		idx = indexAttempts(attempts)
	}
	res := &Result{
		Ops:                opCounts(ops),
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
	for i := range ops {
		slack = max(slack, ops[i].TTL)
	}

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

	draw := opts.Dir != ""
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
			if kc.stuck != nil {
				v.Clients = []int{kc.stuck.Client}
				v.Events = []int64{kc.stuck.InvokeIndex}
				v.Cause, v.Faults = attribute(fs, kc.segFrom, kc.segTo, slack, nil, true)
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
		if d.StaleWrite == history.Accepted || d.NewTurnedAway != "" {
			res.Violations = append(res.Violations, Violation{Kind: kind, Affects: "none", Key: d.Key,
				Start: d.Start, End: d.End, Clients: []int{d.StaleClient, d.NewClient}, Tokens: []string{d.StaleToken, d.NewToken},
				Cause: d.Cause, Faults: d.Faults, Explanation: d.Explanation})
		}
	}
	res.DoubleHolders, res.DoubleHolderList, res.StaleWrites, res.ExposureMs = len(dhs), dhs, sw, exp
	if dhs == nil {
		res.DoubleHolderList = []DoubleHolder{}
	}

	res.FenceTokens = fenceIssues(lockOps, lockKeys)
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
		if err := drawAll(res, opts.Dir, lockChecks, resChecks, fs, t0); err != nil {
			return res, err
		}
	}
	res.CheckMs = ms(time.Since(began))
	return res, nil
}

// drawAll writes a picture for every partition that failed and links the
// violations to it.
func drawAll(res *Result, dir string, lockChecks, resChecks []*keyCheck, fs []fault, t0 int64) error {
	if err := ensureDir(dir); err != nil {
		return err
	}
	used := make(map[string]bool)
	pictures := make(map[[2]string]string)
	for _, group := range []struct {
		prefix  string
		affects string
		checks  []*keyCheck
	}{{runfolder.PageLock, "lock", lockChecks}, {runfolder.PageResource, "resource", resChecks}} {
		for _, kc := range group.checks {
			if kc.info == nil {
				continue
			}
			var marks []porcupine.Annotation
			for _, w := range kc.witnesses {
				if w.end >= kc.from && w.start <= kc.to {
					marks = append(marks, witnessMark(w, t0))
				}
			}
			if kc.stuck != nil {
				marks = append(marks, porcupine.Annotation{Tag: "violation", Start: kc.stuck.Call, End: kc.stuck.Call,
					Description: "cannot be explained", BackgroundColor: "#e74c3c", TextColor: "#ffffff"})
			}
			for _, p := range kc.lost {
				marks = append(marks, porcupine.Annotation{Tag: "violation", Start: max(p[0].Call, p[1].Call),
					End: max(p[0].Call, p[1].Call), Description: "lost update", BackgroundColor: "#e74c3c", TextColor: "#ffffff"})
			}
			name, err := draw(dir, group.prefix, kc, fs, marks, t0, used)
			if err != nil {
				return err
			}
			res.Visualizations = append(res.Visualizations, name)
			pictures[[2]string{group.affects, kc.key}] = name
		}
	}
	for i := range res.Violations {
		v := &res.Violations[i]
		if p, ok := pictures[[2]string{v.Affects, v.Key}]; ok {
			v.Picture = p
		}
	}
	return nil
}
