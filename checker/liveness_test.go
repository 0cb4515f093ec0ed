package checker

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// A stuck lock names every earlier operation whose outcome is unknown, not
// only the last grant that may have left it: in the ZooKeeper soak's stuck
// run the znode that held the key was client 23's (an unknown acquire, then
// an unknown release), while the last unknown acquire on the key was client
// 2's. The checker cannot see which; it must not say one when it could be
// another.
func TestStuckLockNamesEveryUnknownOutcome(t *testing.T) {
	h := newHB().
		acq(3, "early", 1000, 100, 101, info, 0).
		rel(3, "early", 200, 201, info).
		acq(2, "last", 1000, 500, 501, info, 0)
	for i := 0; i < 20; i++ {
		c := 4 + i%3
		at := 1600 + float64(i)*200
		h = h.acq(c, "refused-"+string(rune('a'+i)), 1000, at, at+1, fail, 0)
	}
	r, err := checkExplained(h.build(), nil, Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Liveness.StuckLocks) != 1 {
		t.Fatalf("%d stuck locks, want 1: %+v", len(r.Liveness.StuckLocks), r.Liveness)
	}
	s := r.Liveness.StuckLocks[0]
	if s.LeftBy.Client != 2 {
		t.Errorf("left by client %d, want client 2's last unknown acquire", s.LeftBy.Client)
	}
	if s.UnknownCount != 2 || len(s.Unknown) != 2 || s.Unknown[0].F != "release" || s.Unknown[1].F != "acquire" {
		t.Fatalf("unknown outcomes %d %+v, want client 3's release then its acquire", s.UnknownCount, s.Unknown)
	}
	for _, want := range []string{"client 2", "client 3's release at 0.100 s", "client 3's acquire at 0.000 s", "any of which may have left it taken"} {
		if !strings.Contains(s.Explanation, want) {
			t.Errorf("explanation lacks %q: %s", want, s.Explanation)
		}
	}
	var v *Violation
	for i := range r.Violations {
		if r.Violations[i].Kind == "stuck-lock" {
			v = &r.Violations[i]
		}
	}
	if v == nil || !slices.Contains(v.Clients, 2) || !slices.Contains(v.Clients, 3) {
		t.Errorf("the stuck-lock violation's clients %+v, want 2 and 3", v)
	}
}

// A client whose every acquire failed with an error, or went unanswered, is
// cut off; one refused for another holder, granted once, or that asked
// fewer than CutOffAfter times is not. Cut off changes no verdict.
func TestCutOffClients(t *testing.T) {
	tests := []struct {
		name    string
		errs    []string // client 1's acquires, each failed with this error ("" ends it unknown)
		granted bool     // one more acquire of client 1, granted after the rest
		want    []int
		first   string
	}{
		{name: "every acquire an error", errs: repeat("The client is closed", 12), want: []int{1}, first: "The client is closed"},
		{name: "every acquire unanswered", errs: repeat("", 12), want: []int{1}},
		{name: "refused for another holder", errs: repeat("SET NX PX: held by another client", 12)},
		{name: "refused by a Redlock majority", errs: repeat("redlock acquire: 1 OK, 4 refused, 0 unknown, 0 unreachable of 5 nodes, quorum 3, validity 5.9s; released: info (refused before sending)", 12)},
		{name: "one answer among the errors", errs: append(repeat("The client is closed", 11), "held by another session")},
		{name: "granted at last", errs: repeat("The client is closed", 12), granted: true},
		{name: "too few to say", errs: repeat("The client is closed", CutOffAfter-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Client 0 holds the lock for the whole run.
			h := newHB().acq(0, "holder", 60000, 0, 1, ok, 0)
			for i, e := range tt.errs {
				at := 10 + float64(i)*100
				typ := fail
				if e == "" {
					typ = info
				}
				h.op(1, history.Event{F: history.FAcquire, Token: fmt.Sprintf("t%d", i), TTLMs: 60000}, at, at+1, typ, history.Event{Error: e})
			}
			if tt.granted {
				h.rel(0, "holder", 5000, 5001, ok).acq(1, "late", 1000, 5010, 5011, ok, 0)
			}
			r, err := Check(h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, c := range r.Liveness.CutOff {
				got = append(got, c.Client)
				if c.Error != tt.first {
					t.Errorf("client %d's first error %q, want %q", c.Client, c.Error, tt.first)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("cut off %v, want %v", got, tt.want)
			}
			if r.Liveness.Valid != Valid {
				t.Errorf("liveness %s: cut off must not change the verdict", r.Liveness.Valid)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
