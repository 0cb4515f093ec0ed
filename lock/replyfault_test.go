package lock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// TestReplyFaults: each Valkey recipe's acquire and release, its reply
// dropped or its call cancelled after the command ran, reaches the hook and
// ends in an outcome the server's state bears out: a definite answer (ok,
// fail) must match what the key holds afterwards; info may be either. A
// recipe that turned a lost reply into a definite "no effect" fails here:
// redislock's release once did (go-redis retried the script, the retry found
// the key gone, ErrLockNotHeld read as fail while the first try had freed it).
func TestReplyFaults(t *testing.T) {
	// valkeylock keeps its lock under keys of its own: the key's state
	// says nothing of its outcome, only that the hook fired.
	recipes := []struct {
		name  string
		keyed bool
	}{{Native, true}, {Lua, true}, {Unsafe, true}, {Redsync, true}, {Redislock, true}, {Valkeylock, false}}
	for _, rc := range recipes {
		for _, op := range []string{history.FAcquire, history.FRelease} {
			for _, mode := range []string{ReplyDrop, ReplyCancel} {
				t.Run(fmt.Sprintf("%s/%s/%s", rc.name, op, mode), func(t *testing.T) {
					key := fmt.Sprintf("lock:{reply-%s-%s-%s}", rc.name, op, mode)
					l := open(t, testConfig(rc.name))
					tok := NewToken()
					if op == history.FRelease {
						mustOutcome(t, "acquire", second(l.Acquire(opCtx(t), key, tok, 2*time.Second)), history.OK)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					disarm, err := ArmReply(mode, cancel)
					if err != nil {
						t.Fatal(err)
					}
					var r Result
					if op == history.FAcquire {
						_, r = l.Acquire(ctx, key, tok, 2*time.Second)
					} else {
						r = l.Release(ctx, key, tok)
					}
					if !disarm() {
						t.Fatalf("the fault never fired: no reply of the %s reached the hook (outcome %s)", op, r.Outcome)
					}
					if !rc.keyed || r.Outcome == history.Info {
						return
					}
					holds := get(t, key) == tok
					// What the key must hold after each definite answer.
					want := map[string]map[history.Type]bool{
						history.FAcquire: {history.OK: true, history.Fail: false},
						history.FRelease: {history.OK: false, history.Fail: true},
					}[op][r.Outcome]
					if holds != want {
						t.Fatalf("%s ended %s (%v), yet the key holds the token: %v", op, r.Outcome, r.Err, holds)
					}
				})
			}
		}
	}
}

func second(_ int64, r Result) Result { return r }
