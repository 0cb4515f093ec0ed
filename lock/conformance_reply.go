package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// replyCaseTries is how many operations each reply-fault case faults: a
// cancel is drawn within the program's usual answer time, so some land
// mid-call and some after the answer (6 of 20 mid-call in a run of the
// asyncio example); twenty give each kind of landing a chance.
const replyCaseTries = 20

// replyCases are the cases of a program that takes the reply faults
// (docs/protocol.md, "Reply faults"): a definite answer to a faulted call
// must be what the server holds afterwards. An ok acquire holds the key, a
// fail left it free; an ok release freed it, a fail left it held. info may
// be either: a library that waits for the reply, or says it cannot know,
// is right; one that answers fail for a command that ran is not.
func (t *suite) replyCases() {
	if t.l.cancels {
		t.check("cancelled acquires: each definite answer matches the key", func() string {
			n := map[history.Type]int{}
			for range replyCaseTries {
				k, tok := t.key(), NewToken()
				r := t.faulted(ReplyCancel, "cancelled acquire", func(ctx context.Context) Result {
					_, r := t.l.Acquire(ctx, k, tok, t.ttl(5*time.Second))
					return r
				})
				n[r.Outcome]++
				switch r.Outcome {
				case history.OK:
					t.holds(k, tok)
				case history.Fail:
					t.absent(k, "a cancelled acquire answered fail, so it must have taken nothing")
				}
				t.drop(k)
			}
			return replyCounts(n)
		})
		t.check("a cancelled release, released again: the key ends free", t.releaseAfterCancel)
	}
	if t.l.drops {
		t.check("releases whose reply was lost: each definite answer matches the key", func() string {
			n := map[history.Type]int{}
			for range replyCaseTries {
				k, tok := t.fresh(5 * time.Second)
				r := t.faulted(ReplyDrop, "release with its reply lost", func(ctx context.Context) Result {
					return t.l.Release(ctx, k, tok)
				})
				n[r.Outcome]++
				switch r.Outcome {
				case history.OK:
					t.absent(k, "a release whose reply was lost answered ok, so the key must be free")
				case history.Fail:
					t.holds(k, tok)
				}
				t.drop(k)
			}
			return replyCounts(n)
		})
	}
}

// releaseAfterCancel: an application whose release was cancelled does not
// know whether its lock is free, so it releases again with the same token.
// That second release must free a key the first left held: a library that
// forgot the grant's token when the first call began (redis/redis-py#3847,
// the asyncio Lock before PR #3900) refuses it, and the lock stays taken
// until its TTL with nobody able to give it back. Only a cancel that lands
// before the command runs leaves the key held.
func (t *suite) releaseAfterCancel() string {
	landed, freed, tries := 0, 0, 0
	// Until five cancels landed before their release ran (what the case is
	// about), up to five times the other cases' tries: how many land so
	// varies from run to run (1 to 10 of 20 on 20 runs of the asyncio
	// example).
	for ; tries < 5*replyCaseTries && freed < 5; tries++ {
		k, tok := t.fresh(5 * time.Second)
		if t.l.drops {
			// The connection lost first (an extend's reply dropped with
			// it), so the release must connect again before it sends:
			// what an application's deadline cuts short in practice is a
			// call still waiting for its connection.
			t.faulted(ReplyDrop, "extend with its reply lost", func(ctx context.Context) Result {
				return t.l.Extend(ctx, k, tok, t.ttl(5*time.Second))
			})
		}
		r := t.faulted(ReplyCancel, "cancelled release", func(ctx context.Context) Result {
			return t.l.Release(ctx, k, tok)
		})
		if r.Outcome != history.Info {
			t.drop(k)
			continue // answered before the cancel: the release cases judge it
		}
		landed++
		// A first release sent before its cancel may still run after the
		// second's answer on a busy server (seen with the machine's two
		// cores loaded: the server took a GET from another connection
		// first); 100 ms later it has, or it never will.
		if t.releaseAgain(k, tok, 100*time.Millisecond, "a cancelled release", "redis/redis-py#3847") {
			freed++
		}
		t.drop(k)
	}
	return fmt.Sprintf("%d tries: %d cancels landed mid-call; the second release freed the key after %d of them (the first had not run) and said not held after the rest", tries, landed, freed)
}

// releaseAgain releases key with tok a second time, as an application that
// cannot know whether its first release (after what) took effect does. ok
// must have freed the key; a refusal while the key still holds tok, settle
// after the answer, fails the case: the program lost its grant's token
// (upstream names the library bug that does so). It reports whether the
// second release freed the key.
func (t *suite) releaseAgain(key, tok string, settle time.Duration, after, upstream string) bool {
	r := t.expectNot("second release", history.Info, func(ctx context.Context) Result {
		return t.l.Release(ctx, key, tok)
	})
	if r.Outcome == history.OK {
		t.absent(key, "the second release answered ok, so the key must be free")
		return true
	}
	time.Sleep(settle)
	if t.heldBy(key, tok) {
		t.drop(key)
		later := ""
		if settle > 0 {
			later = fmt.Sprintf(" %v later", settle)
		}
		panic(caseErr{fmt.Sprintf("after %s, releasing again with the same token answered fail (%v) while the key still held that token%s: the program would not release a lock its token holds, and the lock stays taken until its TTL (%s)", after, r.Err, later, upstream)})
	}
	return false
}

// heldBy asks the server whether key holds tok's grant, without failing
// the case when it does not.
func (t *suite) heldBy(key, tok string) (held bool) {
	defer func() {
		if v := recover(); v != nil {
			if _, isCase := v.(caseErr); !isCase {
				panic(v)
			}
			held = false
		}
	}()
	t.holds(key, tok)
	return true
}

// faulted runs op with the reply fault mode armed, and fails the case if
// the fault never reached the program.
func (t *suite) faulted(mode, what string, op func(context.Context) Result) Result {
	disarm, err := ArmReply(mode, func() {})
	if err != nil {
		panic(caseErr{err.Error()})
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.opTimeout)
	defer cancel()
	r := op(ctx)
	if !disarm().Fired {
		panic(caseErr{fmt.Sprintf("%s: the fault never reached the program", what)})
	}
	// No answer at all is info too, and proves nothing either way: the case
	// goes on, as a run would.
	return r
}

func replyCounts(n map[history.Type]int) string {
	return fmt.Sprintf("%d tries: %d ok, %d fail, %d info", replyCaseTries, n[history.OK], n[history.Fail], n[history.Info])
}
