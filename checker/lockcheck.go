package checker

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// keyCheck is everything one lock key or resource row contributed.
type keyCheck struct {
	key       string
	res       KeyResult
	witnesses []witness
	tenures   []*tenure // the key's grants' certain holding intervals
	lost      [][2]*Section
	rewinds   []rewind
	// Set when porcupine found no linearization without a direct witness.
	stuck   *Op
	stuckS  *Section
	segFrom int64
	segTo   int64
	// The picture's model and data, drawn after all checks finish.
	model porcupine.Model
	info  *porcupine.LinearizationInfo
	from  int64
	to    int64
}

func toOperations(ops []*Op, eps int64) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		out[i] = porcupine.Operation{ClientId: o.Client, Input: &lockInput{op: o, eps: eps}, Call: o.Call, Return: o.Return}
	}
	return out
}

func modelFrom(init lockState, t0 int64) porcupine.Model {
	m := lockModel(t0)
	m.Init = func() any { return lockStates{init} }
	return m
}

// checkLockKey decides one key: the direct check first, porcupine on the rest
// (segment by segment, within the budget), and a porcupine window around the
// first witness for the picture.
func checkLockKey(key string, ops []*Op, opts Options, t0 int64, draw bool) *keyCheck {
	began := time.Now()
	deadline := began.Add(opts.Budget)
	eps := int64(opts.Epsilon)
	kc := &keyCheck{key: key, res: KeyResult{Ops: len(ops), Valid: Valid}}
	defer func() { kc.res.CheckMs = ms(time.Since(began)) }()

	// Failed operations constrain nothing; see lockInput.
	live := make([]*Op, 0, len(ops))
	for _, o := range ops {
		if o.Outcome != "fail" {
			live = append(live, o)
		}
	}
	kc.witnesses, kc.tenures = witnessesAndTenures(ops, eps)
	kc.res.Witnesses = len(kc.witnesses)
	if len(kc.witnesses) > 0 {
		kc.res.Valid, kc.res.Porcupine = Invalid, "skipped"
		if draw {
			w := kc.witnesses[0]
			start := w.start
			if w.holder != nil {
				start = min(start, w.holder.grant.Call)
			}
			seg := windowSegment(live, start, w.end, opts.WindowOps)
			m := modelFrom(seg.init, t0)
			_, info := porcupine.CheckOperationsVerbose(m, toOperations(seg.ops, eps), remaining(deadline))
			kc.model, kc.info = m, &info
			kc.from, kc.to = span(seg.ops)
		}
		return kc
	}
	kc.res.Porcupine = "ok"
	segs := lockSegments(live, opts.ChunkOps)
	kc.res.Segments = len(segs)
	i, m, pops, ok := firstIllegal(kc, len(segs), deadline, func(i int) (porcupine.Model, []porcupine.Operation) {
		return modelFrom(segs[i].init, t0), toOperations(segs[i].ops, eps)
	})
	if !ok {
		return kc
	}
	kc.segFrom, kc.segTo = span(segs[i].ops)
	_, info := porcupine.CheckOperationsVerbose(m, pops, remaining(deadline)+time.Second)
	kc.stuck = stuckOp(segs[i].ops, info)
	if draw {
		kc.model, kc.info = m, &info
		kc.from, kc.to = kc.segFrom, kc.segTo
	}
	return kc
}

// firstIllegal checks n segments in order within the deadline, a lock key's
// or a resource row's alike. It records the verdict in kc: unknown when the
// budget runs out first, illegal at the first segment porcupine cannot
// linearize, whose index, model and operations it returns (ok) for the
// caller to explain and draw.
func firstIllegal(kc *keyCheck, n int, deadline time.Time, seg func(i int) (porcupine.Model, []porcupine.Operation)) (int, porcupine.Model, []porcupine.Operation, bool) {
	for i := 0; i < n; i++ {
		left := remaining(deadline)
		if left <= 0 {
			kc.res.Valid, kc.res.Porcupine = Unknown, "unknown"
			return 0, porcupine.Model{}, nil, false
		}
		m, pops := seg(i)
		switch porcupine.CheckOperationsTimeout(m, pops, left) {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			kc.res.Valid, kc.res.Porcupine = Unknown, "unknown"
			return 0, porcupine.Model{}, nil, false
		}
		kc.res.Valid, kc.res.Porcupine = Invalid, "illegal"
		return i, m, pops, true
	}
	return 0, porcupine.Model{}, nil, false
}

// stuckOp names the first operation porcupine could not place.
func stuckOp(ops []*Op, info porcupine.LinearizationInfo) *Op {
	return firstUnplaced(ops, func(o *Op) int64 { return o.Return }, info)
}

// firstUnplaced returns, among the items missing from porcupine's longest
// partial linearization, the one that returned first: some item had to take
// effect before that return, and none could.
func firstUnplaced[T any](items []*T, ret func(*T) int64, info porcupine.LinearizationInfo) *T {
	parts := info.PartialLinearizations()
	if len(parts) == 0 {
		return nil
	}
	var longest []int
	for _, l := range parts[0] {
		if len(l) > len(longest) {
			longest = l
		}
	}
	in := make(map[int]bool, len(longest))
	for _, id := range longest {
		in[id] = true
	}
	var best *T
	for id, it := range items {
		if !in[id] && (best == nil || ret(it) < ret(best)) {
			best = it
		}
	}
	return best
}

func span(ops []*Op) (int64, int64) {
	if len(ops) == 0 {
		return 0, 0
	}
	from, to := ops[0].Call, ops[0].Call
	for _, o := range ops {
		from = min(from, o.Call)
		end := o.Return
		if end == never {
			end = o.Done
		}
		to = max(to, end, o.Call)
	}
	return from, to
}

func remaining(deadline time.Time) time.Duration {
	return time.Until(deadline)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
