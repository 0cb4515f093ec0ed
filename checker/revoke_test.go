package checker

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// A server that ends a holder's session releases its lock honestly (a
// PostgreSQL session lock under pg_terminate_backend): the event that says
// so, naming the key and the client, ends the lease in the lock tier, so a
// grant after it is no double grant. The same history without it, or with
// it naming another client or key, or after the second grant, is one.
func TestRevocationEndsTheLease(t *testing.T) {
	revoke := func(h *hb, client int, key string, at float64) *hb {
		h.events = append(h.events, history.Event{Process: history.Nemesis, Type: history.Info, F: "test-end-session",
			Node: "pg-0", Key: key, Client: client, Time: ms2ns(at)},
			history.Event{Process: history.Nemesis, Type: history.Info, F: "test-session-gone", Node: "pg-0", Time: ms2ns(at + 20)})
		return h
	}
	// A holds from 10 ms with a 1 s lease; B is granted at 200 ms.
	base := func() *hb { return newHB().acq(0, "A", 1000, 10, 11, ok, 1) }
	// The event is logged before the fault acts: the holder's session may
	// answer until the heal, 20 ms on.
	extendAt := func(call float64) *hb {
		return revoke(base(), 0, "lock:{job}", 100).ext(0, "A", 1000, call, call+1, ok).acq(1, "B", 1000, 200, 201, ok, 2)
	}
	unhealed := newHB().acq(0, "A", 1000, 10, 11, ok, 1)
	unhealed.events = append(unhealed.events, history.Event{Process: history.Nemesis, Type: history.Info,
		F: "test-end-session", Node: "pg-0", Key: "lock:{job}", Client: 0, Time: ms2ns(100)})
	// A revocation whose fault never healed may have taken effect at any
	// time after its event, or not at all.
	unhealed = unhealed.ext(0, "A", 1000, 150, 151, ok).acq(1, "B", 1000, 200, 201, ok, 2)
	cases := []struct {
		name string
		h    *hb
		want Validity
	}{
		{"no revocation: a double grant", base().acq(1, "B", 1000, 200, 201, ok, 2), Invalid},
		{"A's session ended first", revoke(base(), 0, "lock:{job}", 100).acq(1, "B", 1000, 200, 201, ok, 2), Valid},
		{"another client's session ended", revoke(base(), 2, "lock:{job}", 100).acq(1, "B", 1000, 200, 201, ok, 2), Invalid},
		{"another key's session ended", revoke(base(), 0, "lock:{other}", 100).acq(1, "B", 1000, 200, 201, ok, 2), Invalid},
		{"the holder's extend answered between the event and its heal", extendAt(101), Valid},
		{"the holder's extend answered after the heal", extendAt(130), Invalid},
		{"never healed: the session may have ended after the holder's extend", unhealed, Valid},
		{"ended after the second grant", revoke(base().acq(1, "B", 1000, 200, 201, ok, 2), 0, "lock:{job}", 300), Invalid},
		// A stale holder's writes are still the resource's business: the
		// revocation changes the lock's verdict only.
		// The fault reads pg_locks, then terminates: the holder may
		// release between the two, and its session ends holding nothing.
		{"the holder released between the event and its heal", revoke(base(), 0, "lock:{job}", 100).rel(0, "A", 105, 106, ok).acq(1, "B", 1000, 200, 201, ok, 2), Valid},
		{"the holder released after the heal", revoke(base(), 0, "lock:{job}", 100).rel(0, "A", 130, 131, ok).acq(1, "B", 1000, 200, 201, ok, 2), Invalid},
		{"released and granted again between the event and its heal: the new grant goes",
			revoke(base(), 0, "lock:{job}", 100).rel(0, "A", 102, 103, ok).acq(0, "A2", 1000, 104, 105, ok, 3).acq(1, "B", 1000, 200, 201, ok, 4), Valid},
		{"granted again after the heal: the new grant stays",
			revoke(base(), 0, "lock:{job}", 100).acq(0, "A2", 1000, 150, 151, ok, 3).acq(1, "B", 1000, 200, 201, ok, 4), Invalid},
		{"A released, then granted again, then ended: the latest grant goes",
			revoke(base().rel(0, "A", 50, 51, ok).acq(0, "A2", 1000, 60, 61, ok, 3), 0, "lock:{job}", 100).acq(1, "B", 1000, 200, 201, ok, 4), Valid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			if r.Lock.Valid != c.want {
				t.Fatalf("lock %v, want %v: %+v", r.Lock.Valid, c.want, r.Violations)
			}
		})
	}
}

// The holder whose session ended writes on until it learns: a double holder,
// counted as one whose lease the server ended, not as a double grant.
func TestRevokedHolderIsNoDoubleGrant(t *testing.T) {
	h := newHB().acq(0, "A", 1000, 10, 11, ok, 1).read(0, "A", 1, 0, 12, 13, ok)
	h.events = append(h.events, history.Event{Process: history.Nemesis, Type: history.Info, F: "test-end-session",
		Node: "pg-0", Key: "lock:{job}", Client: 0, Time: ms2ns(100)})
	h = h.acq(1, "B", 1000, 200, 201, ok, 2).read(1, "B", 2, 0, 202, 203, ok).
		write(0, "A", 1, 1, 250, 251, fail).write(1, "B", 2, 1, 260, 261, ok)
	r, err := Check(h.build(), nil, Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	if r.Lock.Valid != Valid || r.DoubleHolders != 1 {
		t.Fatalf("lock %v, %d double holders; want valid and 1", r.Lock.Valid, r.DoubleHolders)
	}
	if d := r.DoubleHolderList[0]; d.DoubleGrant || !d.Revoked {
		t.Fatalf("double holder %+v: want revoked, not a double grant", d)
	}
}
