// Package checker decides whether a lockjepsen history shows a broken lock: a
// lock service that no correct lease server could be, a resource whose
// critical sections did not run one at a time, clients that held a lock
// together, and what the fence made of it. docs/checker.md describes the
// verdicts and every key of the result.
package checker

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
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
// log (nil when absent); Check without the events. It judges one group of
// keys at a time (a key, or keys that share a token), expanding only that
// group's records into Ops, GOMAXPROCS groups at once: every rule of
// docs/checker.md looks at one key's operations (a token's grants and
// sections stay in its group), so the verdicts are the ones a check holding
// every Op gives, while only a few groups' Ops are live (10M events are 5M
// Ops, 0.9 GB).
func CheckHistory(h *History, idx *AttemptIndex, opts Options) *Result {
	began := time.Now()
	opts = opts.Defaults()
	nem, t0, tEnd := h.nem, h.t0, h.tEnd
	fs := faults(nem, opts.Marks)
	res := &Result{
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
		switch e.F {
		case history.NFailover:
			res.Failovers++
		case history.NClosedBySetting:
			res.ClosedBySetting++
		}
	}
	res.FaultWindows = faultWindows(fs, h.grantTimes(), t0)
	var slack int64
	minTTL := int64(never)
	for i := range h.recs {
		slack = max(slack, h.recs[i].ttl)
		if h.recs[i].ttl > 0 {
			minTTL = min(minTTL, h.recs[i].ttl)
		}
	}
	res.Warnings = epsilonWarnings(opts.Epsilon, minTTL)
	ev := evictionsOf(nem, min(slack, observedLag))
	if opts.Marks.Empty() && slices.ContainsFunc(nem, func(e history.Event) bool {
		return e.F != history.NFailover && e.F != history.NAuditPTTL && e.F != history.NClosedBySetting
	}) {
		// The checker imports no fault catalog (it is a leaf); a program
		// that hands it none would blame nothing.
		res.Warnings = append(res.Warnings, "no fault marks were handed to the checker (checker.Options.Marks), so the nemesis events were read as no fault at all: a program that checks histories must pass nemesis.Catalog()")
	}
	audited, audit := livenessAudit(nem)
	revoked := revocations(nem, opts.Marks)

	groups := h.groups()
	parts := make([]*groupResult, len(groups))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			parts[i] = checkGroup(h.ops(g), revoked, idx, fs, ev, slack, audited, audit, opts, t0)
		}()
	}
	wg.Wait()

	m := merge(parts, res)
	regrant(res.FaultWindows, m.grants, t0)
	res.Coverage = coverage(res.FaultWindows, fs, m.held, m.replied)
	res.NotExercised = notExercised(res.Coverage)
	lockChecks, resChecks := res.addKeys(m)
	res.addDoubleHolders(m.dhs, m.sw)
	res.addFences(fs, slack)
	res.addLiveness(m, parts, audited, audit, t0)
	res.addOwnership(fs, slack)
	res.Valid = and(res.Lock.Valid, res.Resource.Valid, res.Liveness.Valid, res.Ownership.Valid)
	sort.SliceStable(res.Violations, func(i, j int) bool { return res.Violations[i].Start < res.Violations[j].Start })
	for i := range res.Violations {
		res.Violations[i].StartS = rel(res.Violations[i].Start, t0)
		res.Violations[i].EndS = rel(res.Violations[i].End, t0)
	}
	if opts.Pictures {
		res.Pictures = pictures(lockChecks, resChecks, fs, t0)
	}
	res.CheckMs = ms(time.Since(began))
	return res
}

// merged is every group's findings, each kind by key in key order: the order
// one check of every key gives.
type merged struct {
	lockKeys, secKeys []keyOutcome
	dhs               []DoubleHolder
	sw                StaleWrites
	stuck             []stuckOutcome
	held, replied     []heldSpan
	grants            []keyGrants
}

// merge puts the groups' findings in that order; the counts, unknown
// commands, latencies, fence issues and ownership findings go into res.
func merge(parts []*groupResult, res *Result) merged {
	var m merged
	counts := make(map[string]*OpCounts)
	var unknown []UnknownCommand
	var acquires []int64
	for _, p := range parts {
		m.lockKeys = append(m.lockKeys, p.lock...)
		m.secKeys = append(m.secKeys, p.res...)
		res.Resource.Sections += p.sections
		m.dhs = append(m.dhs, p.dhs...)
		m.sw.Attempted += p.sw.Attempted
		m.sw.Accepted += p.sw.Accepted
		m.sw.Rejected += p.sw.Rejected
		m.sw.Unknown += p.sw.Unknown
		res.FenceTokens.Duplicates += p.fences.Duplicates
		res.FenceTokens.Regressions += p.fences.Regressions
		res.FenceTokens.List = append(res.FenceTokens.List, p.fences.List...)
		m.stuck = append(m.stuck, p.stuck...)
		res.Ownership.ExpiredOnArrival = append(res.Ownership.ExpiredOnArrival, p.expired...)
		res.Ownership.Regranted = append(res.Ownership.Regranted, p.regranted...)
		res.Ownership.Orphaned = append(res.Ownership.Orphaned, p.orphaned...)
		for f, c := range p.counts {
			t := counts[f]
			if t == nil {
				t = &OpCounts{}
				counts[f] = t
			}
			t.OK, t.Fail, t.Info, t.Refused = t.OK+c.OK, t.Fail+c.Fail, t.Info+c.Info, t.Refused+c.Refused
		}
		unknown = append(unknown, p.unknown...)
		acquires = append(acquires, p.acquires...)
		m.held = append(m.held, p.held...)
		m.replied = append(m.replied, p.replied...)
		m.grants = append(m.grants, p.grants...)
	}
	res.Ops = counts
	res.UnknownCommands = mergeUnknownCommands(unknown)
	res.LatencyMs = Latency{Acquire: percentilesOf(acquires)}
	byKeyName := func(a, b keyOutcome) int { return strings.Compare(a.key, b.key) }
	slices.SortFunc(m.lockKeys, byKeyName)
	slices.SortFunc(m.secKeys, byKeyName)
	slices.SortStableFunc(m.dhs, func(a, b DoubleHolder) int { return strings.Compare(a.Key, b.Key) })
	slices.SortStableFunc(res.FenceTokens.List, func(a, b FenceIssue) int { return strings.Compare(a.Key, b.Key) })

	return m
}

// addKeys records each lock key's and resource row's verdict and
// violations; it returns the checks porcupine draws.
func (r *Result) addKeys(m merged) (lockChecks, resChecks []*keyCheck) {
	r.Lock = LockResult{Valid: Valid, Keys: make(map[string]*KeyResult)}
	for _, k := range m.lockKeys {
		r.Lock.Keys[k.key] = k.res
		r.Lock.Valid = and(r.Lock.Valid, k.res.Valid)
		r.Violations = append(r.Violations, k.violations...)
		if k.kc != nil {
			lockChecks = append(lockChecks, k.kc)
		}
	}
	r.Resource.Valid = Valid
	r.Resource.Keys = make(map[string]*KeyResult)
	for _, k := range m.secKeys {
		r.Resource.Keys[k.key] = k.res
		r.Resource.Valid = and(r.Resource.Valid, k.res.Valid)
		r.Resource.LostUpdates += k.lost
		r.Resource.Rewinds += k.rewinds
		r.Violations = append(r.Violations, k.violations...)
		if k.kc != nil {
			resChecks = append(resChecks, k.kc)
		}
	}
	return lockChecks, resChecks
}

// addDoubleHolders records the double holders and the findings they are:
// a stale write accepted, a holder the fence turned away.
func (r *Result) addDoubleHolders(dhs []DoubleHolder, sw StaleWrites) {
	for i := range dhs {
		d := dhs[i]
		kind := "stale-write-accepted"
		if d.NewTurnedAway != "" {
			// The older holder's writes landed because the fence sided with
			// it: the newer holder, carrying a set-back number, was refused.
			kind = "newer-holder-turned-away"
			sw.NewerTurnedAway++
		}
		if d.StalePaid() {
			// Numbers from the database's sequence: the stale holder was the
			// one turned away, and the newer holder the lock chose was protected.
			kind = "stale-holder-turned-away"
		}
		if d.StaleWrite == history.Accepted || d.NewTurnedAway != "" || kind == "stale-holder-turned-away" {
			r.Violations = append(r.Violations, Violation{Kind: kind, Affects: "none", Key: d.Key,
				Start: d.Start, End: d.End, Clients: []int{d.StaleClient, d.NewClient}, Tokens: []string{d.StaleToken, d.NewToken},
				Cause: d.Cause, Faults: d.Faults, Facts: &Facts{Double: &dhs[i]}})
		}
	}
	r.DoubleHolders, r.DoubleHolderList, r.StaleWrites, r.ExposureMs = len(dhs), dhs, sw, exposure(dhs)
	if dhs == nil {
		r.DoubleHolderList = []DoubleHolder{}
	}

}

// addFences records a fence issued twice or going backwards as a finding
// that changes no verdict.
func (r *Result) addFences(fs []fault, slack int64) {
	for _, f := range r.FenceTokens.List {
		kind := "duplicate-fence"
		if f.Kind == "regression" {
			kind = "fence-regression"
		}
		v := Violation{Kind: kind, Affects: "none", Key: f.Key, Start: f.Time, End: f.Time, Clients: f.Clients,
			Facts: &Facts{Fence: &f}}
		v.Cause, v.Faults = attribute(fs, f.Time-slack, f.Time, f.Time, slack, nil, true)
		r.Violations = append(r.Violations, v)
	}

}

// addLiveness records the stuck locks, the audit's keys without a lock
// operation judged on the audit alone, and the clients cut off.
func (r *Result) addLiveness(m merged, parts []*groupResult, audited bool, audit map[string]map[string]int64, t0 int64) {
	// Keys the audit saw without a lock operation are judged on the audit alone.
	locked := make(map[string]bool, len(m.lockKeys))
	for _, k := range m.lockKeys {
		locked[k.key] = true
	}
	for k := range audit {
		if !locked[k] {
			if s := stuckLock(k, nil, audited, audit[k], t0); s != nil {
				m.stuck = append(m.stuck, *s)
			}
		}
	}
	slices.SortFunc(m.stuck, func(a, b stuckOutcome) int { return strings.Compare(a.lock.Key, b.lock.Key) })
	reaches := make([]map[int]*reach, len(parts))
	for i, p := range parts {
		reaches[i] = p.reach
	}
	r.Liveness = LivenessResult{Valid: Valid, K: StuckAfterTTLs, Audited: audited, StuckLocks: []StuckLock{}, CutOff: cutOff(reaches)}
	for _, s := range m.stuck {
		r.Liveness.StuckLocks = append(r.Liveness.StuckLocks, s.lock)
		r.Liveness.Valid = Invalid
		r.Violations = append(r.Violations, s.violation)
	}
}

// addOwnership records the misinformed grants.
func (r *Result) addOwnership(fs []fault, slack int64) {
	r.Ownership.Valid = Valid
	for _, k := range []struct {
		kind   string
		issues []OwnershipIssue
	}{{"expired-on-arrival", r.Ownership.ExpiredOnArrival}, {"regranted-to-holder", r.Ownership.Regranted}} {
		kind := k.kind
		for _, o := range k.issues {
			r.Ownership.Valid = Invalid
			v := Violation{Kind: kind, Affects: "ownership", Key: o.Key, Start: o.Time, End: o.Time, Clients: []int{o.Client},
				Tokens: []string{o.Token}, Facts: &Facts{Ownership: &o}}
			v.Cause, v.Faults = attribute(fs, o.Time-slack, o.Time, o.Time, slack, nil, true)
			r.Violations = append(r.Violations, v)
		}
	}
	if r.Ownership.ExpiredOnArrival == nil {
		r.Ownership.ExpiredOnArrival = []OwnershipIssue{}
	}
	if r.Ownership.Regranted == nil {
		r.Ownership.Regranted = []OwnershipIssue{}
	}
	if r.Ownership.Orphaned == nil {
		r.Ownership.Orphaned = []OrphanedSpan{}
	}
	slices.SortStableFunc(r.Ownership.Orphaned, func(a, b OrphanedSpan) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.StartS, b.StartS))
	})
}

// groupResult is what one group of keys found, each finding with its key.
type groupResult struct {
	lock, res []keyOutcome
	sections  int
	dhs       []DoubleHolder // by key, explained
	sw        StaleWrites    // without NewerTurnedAway, counted once all are in
	fences    FenceTokens
	stuck     []stuckOutcome
	expired   []OwnershipIssue // ownership.go
	regranted []OwnershipIssue
	orphaned  []OrphanedSpan // orphaned.go
	counts    map[string]*OpCounts
	unknown   []UnknownCommand
	acquires  []int64 // latencies of completed acquires
	held      []heldSpan
	replied   []heldSpan // the ops a reply fault reached in flight, call to completion
	grants    []keyGrants
	reach     map[int]*reach // liveness.go
}

// keyOutcome is one partition's verdict and violations; kc is kept only
// for a partition porcupine draws (it holds the group's Ops).
type keyOutcome struct {
	key        string
	res        *KeyResult
	violations []Violation
	lost       int
	rewinds    int
	kc         *keyCheck
}

type stuckOutcome struct {
	lock      StuckLock
	violation Violation
}

// checkGroup runs every rule on the Ops of one group of keys.
func checkGroup(ops []Op, revoked []*Op, idx *AttemptIndex, fs []fault, ev evictions, slack int64, audited bool, audit map[string]map[string]int64, opts Options, t0 int64) *groupResult {
	g := &groupResult{counts: opCounts(ops), unknown: unknownCommands(ops, t0), acquires: durations(ops, history.FAcquire), reach: clientReach(ops),
		replied: repliedSpans(ops)}
	g.expired, g.regranted = ownership(ops, t0)
	draw := opts.Pictures
	lockOps, lockKeys := byKey(ops, isLockOp)
	revokedAt := map[string]int64{}
	for _, r := range revoked {
		if v, ok := lockOps[r.Key]; ok {
			c := *r
			lockOps[r.Key] = revoke(v, &c)
			if c.Token != "" {
				revokedAt[c.Token] = c.Call
			}
		}
	}
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
	g.sections = len(secs)

	bl := blame{fs: fs, ev: ev, slack: slack}
	grants := make(map[[2]string]bool)
	for _, k := range lockKeys {
		kc := checkLockKey(k, lockOps[k], opts, t0, draw)
		// A copy, not &kc.res: a pointer into kc kept the whole keyCheck,
		// whose tenures point into the group's Ops, alive until every group
		// was done: 372 MB of Ops held at once on a 10M-event check, 2.1 GB
		// live at its peak (kc itself stays only for a partition drawn).
		kr := kc.res
		out := keyOutcome{key: k, res: &kr}
		out.violations = bl.lockViolations(kc, grants)
		if kc.info != nil {
			out.kc = kc
		}
		g.lock = append(g.lock, out)
		g.held = append(g.held, heldSpans(kc.tenures)...)
		g.orphaned = append(g.orphaned, orphaned(k, lockOps[k], int64(opts.Epsilon), t0)...)
		g.grants = append(g.grants, grantsOf(lockOps[k]))
	}
	for _, k := range secKeys {
		kc := checkResourceKey(k, secByKey[k], opts, draw)
		kr := kc.res // a copy, as for the lock's keys
		out := keyOutcome{key: k, res: &kr, lost: len(kc.lost), rewinds: len(kc.rewinds)}
		out.violations = bl.resourceViolations(kc)
		if kc.info != nil {
			out.kc = kc
		}
		g.res = append(g.res, out)
	}
	inheritCauses(g.lock, g.res)

	g.dhs, g.sw = doubleHolders(ops, fs, idx, grants, revokedAt, slack, int64(opts.Epsilon))
	for i := range g.dhs {
		d := &g.dhs[i]
		d.Evictions = ev.seen(d.Cause, d.Key, d.staleCall, d.staleGrant, d.Start)
	}
	fenceOps, fenceKeys := byKey(ops, func(o *Op) bool { return isLockOp(o) || o.F == history.FFence })
	g.fences = fenceIssues(fenceOps, fenceKeys)
	for _, k := range lockKeys {
		if s := stuckLock(k, lockOps[k], audited, audit[k], t0); s != nil {
			g.stuck = append(g.stuck, *s)
		}
	}
	return g
}

// blame is what a group's violations are attributed with: the faults, the
// evictions the nodes logged, the slack of a fault's window.
type blame struct {
	fs    []fault
	ev    evictions
	slack int64
}

// lockViolations are a lock key's violations: each witness of a lease that
// did not hold, and a history no lock server could have given. It records in
// grants the token pairs granted twice, for the double holders.
func (bl blame) lockViolations(kc *keyCheck, grants map[[2]string]bool) []Violation {
	var vs []Violation
	for _, w := range kc.witnesses {
		v := Violation{Kind: w.kind, Affects: "lock", Key: w.key, Start: w.start, End: w.end,
			Clients: []int{w.holder.grant.Client, w.op.Client}, Tokens: []string{w.holder.token, w.op.Token},
			Events: []int64{w.holder.grant.InvokeIndex, w.op.InvokeIndex}}
		if w.regrant != nil {
			v.Clients = []int{w.holder.grant.Client}
			v.Tokens = []string{w.holder.token, w.regrant.Token}
			v.Events = append(v.Events, w.regrant.InvokeIndex)
		}
		dg := w.kind == "double-grant"
		if dg {
			grants[[2]string{w.holder.token, w.op.Token}] = true
		}
		for _, p := range w.folded {
			grants[p] = true
		}
		// A lease the server ended early is blamed, like a double grant,
		// on what the server went through, never on the client.
		v.Cause, v.Faults = attribute(bl.fs, w.holder.grant.Call, opMoment(w.op), w.end, bl.slack, v.Clients, dg || w.kind == "lease-lost")
		v.Facts = &Facts{Holder: leaseOf(w.holder), Op: w.op, Told: w.told, Regrant: w.regrant, UnknownGrant: w.unknownGrant,
			Evictions: bl.ev.seen(v.Cause, w.key, w.holder.grant.Call, w.holder.grant.Return, opMoment(w.op))}
		vs = append(vs, v)
	}
	if kc.res.Porcupine == "illegal" {
		v := Violation{Kind: "lock-not-linearizable", Affects: "lock", Key: kc.key, Start: kc.segFrom, End: kc.segTo,
			Clients: []int{}, Facts: &Facts{Op: kc.stuck, From: kc.segFrom, To: kc.segTo}}
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
			v.Cause, v.Faults = attribute(bl.fs, kc.segFrom, v.Start, v.End, bl.slack, nil, true)
		}
		vs = append(vs, v)
	}
	return vs
}

// resourceViolations are a resource key's: the lost updates, the rewinds, and
// a history no register could have given.
func (bl blame) resourceViolations(kc *keyCheck) []Violation {
	var vs []Violation
	for _, p := range kc.lost {
		a, b := p[0], p[1]
		// lostUpdates pairs only overlapping sections: both acted at once
		// from the later call to the earlier return.
		v := Violation{Kind: "lost-update", Affects: "resource", Key: kc.key, Start: max(a.Call, b.Call),
			End: min(a.Return, b.Return), Clients: []int{a.Client, b.Client}, Tokens: []string{a.Token, b.Token},
			Events: []int64{a.Write.InvokeIndex, b.Write.InvokeIndex}}
		v.Cause, v.Faults = attribute(bl.fs, min(a.Call, b.Call), v.Start, v.End, bl.slack, v.Clients, false)
		v.Facts = &Facts{Sections: []*Section{a, b}}
		vs = append(vs, v)
	}
	for _, r := range kc.rewinds {
		w, c := r.stale, r.current
		v := Violation{Kind: "rewind", Affects: "resource", Key: kc.key, Start: w.Write.Call, End: max(w.Write.Call, w.Return),
			Clients: []int{w.Client}, Tokens: []string{w.Token}, Events: []int64{w.Write.InvokeIndex, c.Write.InvokeIndex}}
		if c.Client != w.Client {
			v.Clients = append(v.Clients, c.Client)
		}
		v.Cause, v.Faults = attribute(bl.fs, w.Call, w.Write.Call, v.End, bl.slack, []int{w.Client}, false)
		v.Facts = &Facts{Sections: []*Section{w, c}}
		vs = append(vs, v)
	}
	if kc.res.Porcupine == "illegal" {
		v := Violation{Kind: "resource-not-linearizable", Affects: "resource", Key: kc.key, Start: kc.segFrom,
			End: kc.segTo, Clients: []int{}, Facts: &Facts{From: kc.segFrom, To: kc.segTo}}
		if kc.stuckS != nil {
			v.Clients = []int{kc.stuckS.Client}
			v.Facts.Sections = []*Section{kc.stuckS}
		}
		at := kc.segTo
		if kc.stuckS != nil {
			at = kc.stuckS.Call
		}
		v.Cause, v.Faults = attribute(bl.fs, kc.segFrom, at, kc.segTo, bl.slack, v.Clients, false)
		vs = append(vs, v)
	}
	return vs
}

// inheritCauses blames a lost update or a rewind that no fault explains on
// the double grant it happened inside: the same key, the same two clients,
// within the grant's overlap. The resource's own attribution starts at the
// earlier of the two sections, and a double grant's later sections begin
// after the fault that caused it has healed: seen on Valkey Cluster's
// failover race, where the first lost update of an overlap was blamed on
// the failover and the next four, 60-400 ms later, on nothing.
func inheritCauses(lock, res []keyOutcome) {
	var dgs []*Violation
	for _, k := range lock {
		for i := range k.violations {
			if v := &k.violations[i]; v.Kind == "double-grant" && v.Cause != "none" {
				dgs = append(dgs, v)
			}
		}
	}
	for _, k := range res {
		for i := range k.violations {
			v := &k.violations[i]
			if v.Cause != "none" || len(v.Clients) != 2 {
				continue
			}
			for _, d := range dgs {
				if d.Key == v.Key && d.Start <= v.End && v.Start <= d.End && sameClients(d.Clients, v.Clients) {
					v.Cause, v.Faults = d.Cause, d.Faults
					break
				}
			}
		}
	}
}

func sameClients(a, b []int) bool {
	return len(a) == 2 && len(b) == 2 && (a[0] == b[0] && a[1] == b[1] || a[0] == b[1] && a[1] == b[0])
}

// opMoment is when an operation took effect at the latest: its reply, or its
// call when it has none.
func opMoment(o *Op) int64 {
	if o.Return == never {
		return o.Call
	}
	return o.Return
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
