package history

import "container/heap"

// Merge combines per-process streams, each already in time order, into one
// time-ordered history and renumbers the indexes from 0. O(n log k).
func Merge(streams ...[]Event) []Event {
	n := 0
	h := make(mergeHeap, 0, len(streams))
	for i, s := range streams {
		n += len(s)
		if len(s) > 0 {
			h = append(h, cursor{i, 0, s[0].Time})
		}
	}
	heap.Init(&h)
	out := make([]Event, 0, n)
	for h.Len() > 0 {
		c := &h[0]
		e := streams[c.stream][c.pos]
		e.Index = int64(len(out))
		out = append(out, e)
		c.pos++
		if c.pos < len(streams[c.stream]) {
			c.time = streams[c.stream][c.pos].Time
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return out
}

type cursor struct {
	stream, pos int
	time        int64
}

type mergeHeap []cursor

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].time != h[j].time {
		return h[i].time < h[j].time
	}
	return h[i].stream < h[j].stream
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(cursor)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
