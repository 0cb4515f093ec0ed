package resource

import "testing"

func TestReasonWording(t *testing.T) {
	row := Row{LastFence: 42, LastToken: "9c1e55aa77"}
	tests := []struct {
		mode Mode
		h    Holder
		want string
	}{
		{ModeWrite, Holder{Fence: 41, Token: "x"}, "rejected: fence 41 is older than last_fence 42 — a newer holder has written"},
		{ModeReadWrite, Holder{Fence: 41, Token: "x"}, "rejected: fence 41 is older than last_fence 42 — a newer holder has read or written"},
		{ModeWrite, Holder{Fence: 42, Token: "x"}, "rejected: fence 42 was already used by another holder (token 9c1e…); a failover probably lost an INCR"},
		{ModeReadWrite, Holder{Fence: 42, Token: "x"}, "rejected: fence 42 was already used by another holder (token 9c1e…); a failover probably lost an INCR"},
		{ModeWrite, Holder{Fence: 42, Token: "9c1e55aa77"}, "rejected: fence 42 has already written once; in mode write each fence number writes once — acquire again for a new number"},
	}
	for _, tc := range tests {
		if got := rejectReason(tc.mode, tc.h, row); got != tc.want {
			t.Errorf("%s %+v:\n got %s\nwant %s", tc.mode, tc.h, got, tc.want)
		}
	}
	notes := []struct {
		h    Holder
		want string
	}{
		{Holder{Fence: 41}, "accepted without a check (mode none): fence 41 is older than last_fence 42 — a fence check would have turned this stale write away"},
		{Holder{Fence: 42, Token: "x"}, "accepted without a check (mode none): fence 42 was already used by another holder (token 9c1e…) — a fence check would have turned this write away"},
		{Holder{Fence: 43}, ""},
		{Holder{}, ""},
	}
	for _, tc := range notes {
		if got := unfencedNote(tc.h, row); got != tc.want {
			t.Errorf("none %+v:\n got %q\nwant %q", tc.h, got, tc.want)
		}
	}
}
