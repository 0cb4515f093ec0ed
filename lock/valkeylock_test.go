package lock

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go/valkeylock"
)

// A 0 from the library's delete or extend script, or a nil from its SET
// NX, proves nothing happened only when no earlier try of the command may
// have run. net-timeout, seed 1: a delete ran, its reply stalled, the
// client retried after the heal and got 0 (another client held the key by
// then); reported as fail, the checker took the holder's lease to run on and
// called the next three grants double grants.
func TestValkeylockRetriedReplyIsUnknown(t *testing.T) {
	notLocked := fmt.Errorf("valkeylock TryWithContext: %w", valkeylock.ErrNotLocked)
	for _, c := range []struct {
		name    string
		got     Result
		outcome history.Type
	}{
		{"script 1", scriptResult(1, nil, false), history.OK},
		{"script 1 after a retry", scriptResult(1, nil, true), history.OK},
		{"script 0, one try", scriptResult(0, nil, false), history.Fail},
		{"script 0 after a retry", scriptResult(0, nil, true), history.Info},
		{"script, connection lost", scriptResult(0, io.EOF, false), history.Info},
		{"acquire ok", acquireResult(nil, true), history.OK},
		{"acquire held by others, one try", acquireResult(notLocked, false), history.Fail},
		{"acquire held by others after a retry", acquireResult(notLocked, true), history.Info},
		{"acquire, connection lost", acquireResult(fmt.Errorf("valkeylock TryWithContext: %w", io.EOF), false), history.Info},
	} {
		if c.got.Outcome != c.outcome {
			t.Errorf("%s: %s (%v), want %s", c.name, c.got.Outcome, c.got.Err, c.outcome)
		}
		if c.got.Outcome == history.Info && errors.Is(c.got.Err, valkeylock.ErrNotLocked) && history.SaysNotHeld(c.got.Err.Error()) {
			t.Errorf("%s: an unknown outcome reads as \"not held\": %v", c.name, c.got.Err)
		}
	}
}

// The retry hook notes the library's scripts only (EVALSHA, and EVAL of
// the same source), forgets a note once read, and keeps valkey-go's default
// delays (2^n µs plus jitter, at most 1 s).
func TestValkeylockRetryNoted(t *testing.T) {
	l := &vlock{retried: map[string]bool{}}
	del := []string{"EVALSHA", vlDeleteSHA, "1", "valkeylock:0:k", "v", "1"}
	evalExtend := []string{"EVAL", `if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`, "1", "valkeylock:0:k", "v", "1"}
	other := []string{"EVALSHA", "0123", "1", "valkeylock:0:k", "v", "1"}
	for _, args := range [][]string{del, evalExtend, other, {"GET", "k"}} {
		l.noteRetry(args)
	}
	for _, args := range [][]string{del, evalExtend} {
		if !l.tookRetry(commandID(args)) {
			t.Errorf("a retried script is not noted: %.20q", args)
		}
		if l.tookRetry(commandID(args)) {
			t.Errorf("a note is not forgotten once read: %.20q", args)
		}
	}
	if len(l.retried) != 0 {
		t.Errorf("commands that are not the library's scripts are noted: %v", l.retried)
	}
	for attempts, want := range map[int][2]time.Duration{1: {2 * time.Microsecond, 4 * time.Microsecond}, 30: {time.Second, time.Second}} {
		if d := retryBackoff(attempts); d < want[0] || d > want[1] {
			t.Errorf("attempt %d: delay %v, want %v..%v", attempts, d, want[0], want[1])
		}
	}
}

// The library fixes its deadlines before it sends (PXAT, PEXPIREAT), so the
// lease left at the reply is the TTL less the call's length, never under
// 1 ms (validity_ms 0 would read as the whole TTL).
func TestValkeylockValidityIsCountedFromTheCall(t *testing.T) {
	start := time.Unix(100, 0)
	for _, c := range []struct {
		took, want time.Duration
	}{
		{0, 3 * time.Second},
		{436 * time.Millisecond, 2564 * time.Millisecond}, // net-timeout, seed 5's acquire
		{3 * time.Second, time.Millisecond},
		{5 * time.Second, time.Millisecond},
	} {
		if got := leftOf(3*time.Second, start, start.Add(c.took)); got != c.want {
			t.Errorf("a call of %v leaves %v, want %v", c.took, got, c.want)
		}
	}
}
