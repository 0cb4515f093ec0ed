package lock

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/go-redsync/redsync/v4"
	"github.com/lockjepsen/lockjepsen/history"
)

// joined builds an Unlock error as redsync's actOnPoolsAsync does: each node
// that did not answer ok joined onto the ones before.
func joined(errs ...error) error {
	var err error
	for _, e := range errs {
		err = errors.Join(err, e)
	}
	return err
}

// multi is hashicorp/go-multierror's shape, which redsync before v4.13 joins
// node errors with: a flat list behind WrappedErrors.
type multi []error

func (m multi) Error() string          { return errors.Join(m...).Error() }
func (m multi) WrappedErrors() []error { return m }

// Both joins count one error per node: the pinned versions of a finding
// (v4.12.x) are tallied as v4.17.0 is.
func TestRedsyncTallyOfEitherJoin(t *testing.T) {
	taken := func(n int) error { return &redsync.ErrNodeTaken{Node: n} }
	lost := &redsync.RedisError{Node: 2, Err: syscall.ECONNRESET}
	for name, err := range map[string]error{
		"errors.Join": joined(taken(0), taken(1), lost),
		"multierror":  multi{taken(0), taken(1), lost},
	} {
		if nodes, unknown := redsyncTally(err); nodes != 3 || unknown != 1 {
			t.Errorf("%s: %d nodes, %d unknown; want 3 and 1", name, nodes, unknown)
		}
	}
}

// An Unlock short of its quorum is unknown when it deleted the token on some
// nodes or may have, and stays redsync's own verdict when no node deleted it.
func TestRedsyncPartialRelease(t *testing.T) {
	taken := func(n int) error { return &redsync.ErrNodeTaken{Node: n} }
	// A node that is down refuses the dial: nothing was sent to it.
	refused := func(n int) error {
		return &redsync.RedisError{Node: n, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	}
	lostReply := func(n int) error { return &redsync.RedisError{Node: n, Err: syscall.ECONNRESET} }
	cases := []struct {
		name    string
		err     error
		pools   int
		partial bool
	}{
		{"two of five deleted, the restarted node and two others refuse", joined(taken(0), taken(3), taken(4)), 5, true},
		{"one of five deleted, the rest refused or down", joined(taken(0), refused(1), taken(2), taken(3)), 5, true},
		{"none deleted, one reply lost", joined(taken(0), taken(1), lostReply(2), taken(3), taken(4)), 5, true},
		{"none deleted, every node refused", joined(taken(0), taken(1), refused(2), taken(3), taken(4)), 5, false},
		{"one pool, not held", joined(taken(0)), 1, false},
		{"not a per-node report", errors.New("redsync: not unlocked"), 5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, partial := redsyncPartialRelease(c.err, c.pools)
			if partial != c.partial {
				t.Fatalf("partial = %v, want %v (%v)", partial, c.partial, r.Err)
			}
			if partial && r.Outcome != history.Info {
				t.Errorf("outcome %v, want info", r.Outcome)
			}
		})
	}
}

// An Extend over five pools is a refusal (not held) when the token is left on
// no majority, a lost reply counting as holding it.
func TestRedsyncMinority(t *testing.T) {
	taken := func(n int) error { return &redsync.ErrNodeTaken{Node: n} }
	lostReply := func(n int) error { return &redsync.RedisError{Node: n, Err: syscall.ECONNRESET} }
	refused := func(n int) error {
		return &redsync.RedisError{Node: n, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	}
	for _, tc := range []struct {
		name     string
		err      error
		minority bool
	}{
		{"extended on two, the restarted node and two others refuse", joined(taken(0), taken(3), taken(4)), true},
		{"extended on two, one down, two refuse", joined(refused(0), taken(3), taken(4)), true},
		{"extended on two, two replies lost: maybe a majority", joined(lostReply(0), lostReply(3), taken(4)), false},
		{"extended on three, past its validity", redsync.ErrExtendFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redsyncMinority(tc.err, 5); got != tc.minority {
				t.Errorf("redsyncMinority = %v, want %v", got, tc.minority)
			}
		})
	}
}
