package workload

import (
	"sync"
)

// hold is one granted lease as the client sees it.
type hold struct {
	key, token string
	fence      int64

	mu     sync.Mutex
	endDec int64         // lease end on the decision clock
	lost   chan struct{} // closed when a renew failed or the lease ran out
	once   sync.Once
}

func newHold(key, token string, fence, end int64) *hold {
	return &hold{key: key, token: token, fence: fence, endDec: end, lost: make(chan struct{})}
}

func (h *hold) end() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.endDec
}

func (h *hold) extendTo(end int64) {
	h.mu.Lock()
	if end > h.endDec {
		h.endDec = end
	}
	h.mu.Unlock()
}

func (h *hold) lose() { h.once.Do(func() { close(h.lost) }) }

func (h *hold) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}
