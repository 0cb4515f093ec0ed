package checker

import (
	"slices"
	"strings"
	"testing"
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
	r, err := Check(h.build(), nil, Options{})
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
