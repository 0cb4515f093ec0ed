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
