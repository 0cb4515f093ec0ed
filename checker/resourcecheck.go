package checker

import (
	"time"

	"github.com/anishathalye/porcupine"
)

func sectionOperations(secs []*Section) []porcupine.Operation {
	out := make([]porcupine.Operation, len(secs))
	for i, s := range secs {
		out[i] = porcupine.Operation{ClientId: s.Client, Input: s, Call: s.Call, Return: s.Return}
	}
	return out
}

// checkResourceKey decides one resource row the way checkLockKey decides a key.
func checkResourceKey(key string, secs []*Section, opts Options, draw bool) *keyCheck {
	began := time.Now()
	deadline := began.Add(opts.Budget)
	kc := &keyCheck{key: key, res: KeyResult{Ops: len(secs), Valid: Valid}}
	defer func() { kc.res.CheckMs = ms(time.Since(began)) }()
	m := resourceModel()

	kc.lost = lostUpdates(secs)
	kc.rewinds = rewinds(secs)
	kc.res.Witnesses = len(kc.lost) + len(kc.rewinds)
	if kc.res.Witnesses > 0 {
		kc.res.Valid, kc.res.Porcupine = Invalid, "skipped"
		if draw {
			var a, b *Section
			if len(kc.lost) > 0 {
				a, b = kc.lost[0][0], kc.lost[0][1]
			}
			if len(kc.rewinds) > 0 && (a == nil || kc.rewinds[0].stale.Call < a.Call) {
				a, b = kc.rewinds[0].current, kc.rewinds[0].stale
			}
			win := sectionWindow(secs, a, b, opts.WindowOps)
			_, info := porcupine.CheckOperationsVerbose(m, sectionOperations(win), remaining(deadline))
			kc.model, kc.info = m, &info
			kc.from, kc.to = sectionSpan(win)
		}
		return kc
	}
	kc.res.Porcupine = "ok"
	segs := resourceSegments(secs, opts.ChunkOps)
	kc.res.Segments = len(segs)
	i, _, pops, ok := firstIllegal(kc, len(segs), deadline, func(i int) (porcupine.Model, []porcupine.Operation) {
		return m, sectionOperations(segs[i])
	})
	if !ok {
		return kc
	}
	kc.segFrom, kc.segTo = sectionSpan(segs[i])
	_, info := porcupine.CheckOperationsVerbose(m, pops, remaining(deadline)+time.Second)
	kc.stuckS = stuckSection(segs[i], info)
	if draw {
		kc.model, kc.info = m, &info
		kc.from, kc.to = kc.segFrom, kc.segTo
	}
	return kc
}

// sectionWindow takes the sections that overlap the two colliding ones, plus
// a few on either side for context, capped at max.
func sectionWindow(secs []*Section, a, b *Section, maxOps int) []*Section {
	from, to := a.Call, max(a.Return, b.Return)
	if to == never {
		to = max(a.Call, b.Call)
	}
	lo, hi := -1, -1
	for i, s := range secs {
		if s.Return >= from && s.Call <= to {
			if lo < 0 {
				lo = i
			}
			hi = i + 1
		}
	}
	if lo < 0 {
		return nil
	}
	lo, hi = max(0, lo-5), min(len(secs), hi+5)
	if hi-lo > maxOps {
		hi = lo + maxOps
	}
	return secs[lo:hi]
}

func sectionSpan(secs []*Section) (int64, int64) {
	if len(secs) == 0 {
		return 0, 0
	}
	from, to := secs[0].Call, secs[0].Call
	for _, s := range secs {
		from = min(from, s.Call)
		if s.Return != never {
			to = max(to, s.Return)
		}
	}
	return from, to
}

func stuckSection(secs []*Section, info porcupine.LinearizationInfo) *Section {
	return firstUnplaced(secs, func(s *Section) int64 { return s.Return }, info)
}
