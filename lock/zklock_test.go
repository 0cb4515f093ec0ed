package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockjepsen/lockjepsen/history"
)

// The holder is the lowest sequence number, whatever prefix a znode has.
func TestZKSeqOrder(t *testing.T) {
	for _, tc := range []struct {
		kids []string
		want string
	}{
		{[]string{"lock-0000000012", "lock-0000000003", "lock-0000000100"}, "lock-0000000003"},
		{[]string{"b-0000000002", "a-0000000009"}, "b-0000000002"},
		{[]string{"lock-0000000001"}, "lock-0000000001"},
	} {
		kids := slices.Clone(tc.kids)
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(zkSeq(a), zkSeq(b)) })
		if kids[0] != tc.want {
			t.Errorf("%v: holder %s, want %s", tc.kids, kids[0], tc.want)
		}
	}
}

// ZooKeeper's answers are definite, a lost connection or a deadline is not;
// a vanished znode is the session's end, the lease's end.
func TestZKResult(t *testing.T) {
	for _, tc := range []struct {
		err     error
		want    history.Type
		notHeld bool
	}{
		{nil, history.OK, false},
		{zk.ErrNoNode, history.Fail, true},
		{zk.ErrSessionExpired, history.Fail, true},
		{zk.ErrBadVersion, history.Fail, false},
		{zk.ErrConnectionClosed, history.Info, false},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), history.Info, false},
		{zk.ErrNoServer, history.Info, false},
	} {
		r := zkResult("set", tc.err)
		if r.Outcome != tc.want || errors.Is(r.Err, ErrNotHeld) != tc.notHeld {
			t.Errorf("%v: %s (not held %v), want %s (not held %v)", tc.err, r.Outcome, errors.Is(r.Err, ErrNotHeld), tc.want, tc.notHeld)
		}
	}
}

// The session is never shorter than the TTL the history records.
func TestZKSessionTimeout(t *testing.T) {
	for _, ttl := range []time.Duration{100 * time.Millisecond, 2 * time.Second, 3500 * time.Millisecond} {
		if got := ZKSessionTimeout(ttl); got < ttl || got < 400*time.Millisecond {
			t.Errorf("ZKSessionTimeout(%v) = %v", ttl, got)
		}
	}
}
