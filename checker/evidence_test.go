package checker

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// evicted adds the nemesis's log of the lock's primary evicting key at t.
func (h *hb) evicted(key string, t float64) *hb {
	h.events = append(h.events, history.Event{Process: history.Nemesis, Type: history.Info, F: history.NEvicted,
		Key: key, Node: "valkey-0", Time: ms2ns(t)})
	return h
}

// oldEvictionClaim is the sentence that says the key was evicted; a
// violation whose span holds no logged eviction of its key must not say it.
const oldEvictionClaim = "was evicted (the eviction's DEL"

// A violation blamed on eviction names the eviction of its key that the node
// logged between the first grant and the second (a moment later still: the
// log trails the eviction), or says that none was logged there. Before, every
// such violation said the key was evicted, logged or not.
func TestEvictionExplanationStatesTheLoggedEviction(t *testing.T) {
	// Client 0 holds lock:{job} from 0.101 s for 2 s; client 1 is granted
	// it at 0.201 s, while the primary is over its maxmemory.
	doubleGrant := func(firstReply float64, ev func(*hb)) *hb {
		h := newHB().nem("memory-pressure", "valkey-0", 0)
		ev(h)
		return h.acq(0, "A", 2000, 100, firstReply, ok, 1).
			acq(1, "B", 2000, 200, 201, ok, 2).
			rel(1, "B", 300, 301, ok)
	}
	const noneLogged = "but the node logged no eviction of lock:{job} between client 0's acquire at 0.100 s and client 1's grant at 0.201 s: the cause named is the fault in force, not an eviction seen."
	for _, tt := range []struct {
		name string
		h    *hb
		kind string // the violation besides the double holder
		want string
	}{
		{name: "the key evicted between the two grants",
			h: doubleGrant(101, func(h *hb) { h.evicted("lock:{job}", 150) }), kind: "double-grant",
			want: "was evicted (the eviction's DEL reached the replicas too), so the lock was free to grant again, with no failover at all. The node logged lock:{job} evicted at 0.150 s, between client 0's grant at 0.101 s and client 1's grant at 0.201 s."},
		{name: "evicted twice between the grants: the first named, both counted",
			h: doubleGrant(101, func(h *hb) { h.evicted("lock:{job}", 150).evicted("lock:{job}", 180) }), kind: "double-grant",
			want: "The node logged lock:{job} evicted at 0.150 s, between client 0's grant at 0.101 s and client 1's grant at 0.201 s (the first of 2 evictions of the key logged between them)."},
		{name: "logged a moment after the second grant (within the log's lag)",
			h: doubleGrant(101, func(h *hb) { h.evicted("lock:{job}", 201.6) }), kind: "double-grant",
			want: "The node logged lock:{job} evicted at 0.202 s, 0.6 ms after client 1's grant at 0.201 s (the node's notice comes a moment after the eviction)."},
		{name: "logged while the first grant's reply was on its way",
			h: doubleGrant(120, func(h *hb) { h.evicted("lock:{job}", 110) }), kind: "double-grant",
			want: "The node logged lock:{job} evicted at 0.110 s, after client 0's acquire at 0.100 s was sent and before client 1's grant at 0.201 s."},
		{name: "only another key evicted in the span",
			h: doubleGrant(101, func(h *hb) { h.evicted("lock:{other}", 150) }), kind: "double-grant", want: noneLogged},
		{name: "the key evicted before the first acquire",
			h: doubleGrant(101, func(h *hb) { h.evicted("lock:{job}", 50) }), kind: "double-grant", want: noneLogged},
		{name: "the key evicted long after the second grant",
			h: doubleGrant(101, func(h *hb) { h.evicted("lock:{job}", 1300) }), kind: "double-grant", want: noneLogged},
		{name: "no eviction logged at all",
			h: doubleGrant(101, func(*hb) {}), kind: "double-grant", want: noneLogged},
		{name: "a lease lost: evicted before the not-held reply",
			h: newHB().nem("memory-pressure", "valkey-0", 0).
				acq(2, "X", 2000, 100, 101, ok, 1).
				evicted("lock:{job}", 150).
				op(2, history.Event{F: history.FRelease, Token: "X"}, 300, 301, fail, history.Event{Error: "DELIFEQ returned 0 (not held)"}).
				acq(2, "Y", 2000, 310, 311, ok, 2).
				rel(2, "Y", 400, 401, ok),
			kind: "lease-lost",
			want: "The node logged lock:{job} evicted at 0.150 s, between client 2's grant at 0.101 s and the reply to its release at 0.301 s."},
		{name: "a lease lost with no eviction of the key logged",
			h: newHB().nem("memory-pressure", "valkey-0", 0).
				acq(2, "X", 2000, 100, 101, ok, 1).
				evicted("lock:{other}", 150).
				op(2, history.Event{F: history.FRelease, Token: "X"}, 300, 301, fail, history.Event{Error: "DELIFEQ returned 0 (not held)"}).
				acq(2, "Y", 2000, 310, 311, ok, 2).
				rel(2, "Y", 400, 401, ok),
			kind: "lease-lost",
			want: "but the node logged no eviction of lock:{job} between client 2's acquire at 0.100 s and the reply to its release at 0.301 s: the cause named is the fault in force, not an eviction seen."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := checkExplained(tt.h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, v := range r.Violations {
				if v.Kind == tt.kind {
					if v.Cause != "eviction" {
						t.Fatalf("%s blamed on %q, want eviction", v.Kind, v.Cause)
					}
					texts = append(texts, v.Explanation)
				}
			}
			if len(texts) != 1 {
				t.Fatalf("%d %s violations, want 1: %+v", len(texts), tt.kind, r.Violations)
			}
			if tt.kind == "double-grant" {
				// The double holder's own explanation says the same.
				if len(r.DoubleHolderList) != 1 {
					t.Fatalf("%d double holders, want 1", len(r.DoubleHolderList))
				}
				texts = append(texts, r.DoubleHolderList[0].Explanation)
			}
			for _, got := range texts {
				if !strings.Contains(got, tt.want) {
					t.Errorf("explanation lacks %q:\n%s", tt.want, got)
				}
				if strings.Contains(tt.want, "logged no eviction") && strings.Contains(got, oldEvictionClaim) {
					t.Errorf("explanation claims an eviction none logged:\n%s", got)
				}
			}
		})
	}
}
