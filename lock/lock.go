package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// Outcome is how an operation ended, in the history's terms.
type Outcome = history.Type

// Result is the outcome of one lock operation and the error behind a fail or
// an info. Err is nil exactly when Outcome is history.OK.
type Result struct {
	Outcome Outcome
	Err     error
}

// Ok reports whether the operation definitely took effect.
func (r Result) Ok() bool { return r.Outcome == history.OK }

// Error is the text recorded in the history's error field.
func (r Result) Error() string {
	if r.Err == nil {
		return ""
	}
	return r.Err.Error()
}

func ok() Result { return Result{Outcome: history.OK} }

// fail is for operations that definitely had no effect.
func fail(err error) Result { return Result{Outcome: history.Fail, Err: err} }

// contended is a refused acquire because another client holds the lock,
// in a library's own words (redsync's ErrTaken, redislock's ErrNotObtained,
// valkeylock's ErrNotLocked, a consensus waiter's timeout): the recipe adds
// the phrase the availability figures count as contention
// (history.RefusalReason), so that a library's refusals read as the lock
// working rather than as errors, as the native recipe's do.
func contended(err error) Result {
	return fail(fmt.Errorf("%w: another client holds the lock", err))
}

// Lock is one recipe bound to its connection(s). The caller picks the token
// (NewToken) before invoking, so the history's invoke event can carry it; a
// library that makes its own value still reports under the caller's token.
//
// All methods are safe for concurrent use: the client renews in the
// background while its critical section runs.
type Lock interface {
	// Recipe is the recipe's name, e.g. "native".
	Recipe() string
	// Acquire tries once, without waiting, to take key for ttl. fence is the
	// fencing token when fencing is on and the acquire is ok, else 0.
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (fence int64, r Result)
	// Extend pushes the lease of a held lock to ttl from now.
	Extend(ctx context.Context, key, token string, ttl time.Duration) Result
	// Release gives the lock up.
	Release(ctx context.Context, key, token string) Result
	// SelfRenewing reports that the library extends its own leases (valkeylock):
	// the caller must not call Extend and should watch Lost instead.
	SelfRenewing() bool
	// Lost is closed when a self-renewing library gives up a held lock; nil
	// for recipes the caller renews itself.
	Lost(key, token string) <-chan struct{}
	// SafeRelease reports whether Release checks the token, so that releasing
	// after an unknown acquire cannot delete another client's lock.
	SafeRelease() bool
	// Observe sets a callback that reports operations a library performs on its
	// own (valkeylock's background extends). Recipes without any ignore it.
	Observe(fn Observer)
	Close()
}

// Observer receives an operation a library did by itself: an invoke, then its
// completion, each stamped by the caller with true time.
type Observer func(f, key, token string, t history.Type, ttl time.Duration, err error)
