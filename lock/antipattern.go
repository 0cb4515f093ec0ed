package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"
)

// The anti-patterns' recipe names: each leaves a lock stuck forever (a key
// without a TTL).
const (
	SetnxExpire = "setnx-expire"
	ExtendNoPX  = "extend-no-px"
)

// setnxExpire is the Valkey 9 lock article's first lesson, kept on purpose: SETNX, then EXPIRE,
// as two commands. A client that dies between them leaves a key with no TTL:
// nobody can ever take the lock again ("explain why NX and EX must be one
// command"). Extend and release are the safe native ones, so the only flaw is
// the gap.
type setnxExpire struct{ *basic }

func openSetnxExpire(cfg Config) (Lock, error) {
	l, err := openBasic(cfg, &basic{extend: nativeExtend, release: nativeRelease, safe: true})
	if err != nil {
		return nil, err
	}
	return setnxExpire{l.(*basic)}, nil
}

func (s setnxExpire) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	c := s.c
	n, err := c.Do(ctx, c.B().Setnx().Key(key).Value(token).Build()).AsInt64()
	if r := intReply("SETNX", n, err, "another client holds the lock"); !r.Ok() {
		return 0, r
	}
	step(ctx, "after-setnx") // the crash fault's moment: the key exists, without a TTL
	v, err := c.Do(ctx, c.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build()).AsInt64()
	if err != nil {
		return 0, result(fmt.Errorf("PEXPIRE after SETNX (the key may stay without a TTL): %w", err))
	}
	if v == 0 {
		return 0, fail(fmt.Errorf("PEXPIRE after SETNX returned 0: the key vanished in between (%w)", ErrNotHeld))
	}
	return 0, ok()
}

// extendNoPX is the Valkey 9 lock article's "an extend without PX turns the lock into
// a permanent key": SET k tok IFEQ tok with no PX drops the TTL, so a holder
// that dies after its first renewal leaves the lock taken forever.
func openExtendNoPX(cfg Config) (Lock, error) {
	return openBasic(cfg, &basic{extend: extendNoPX, release: nativeRelease, safe: true})
}

func extendNoPX(ctx context.Context, c valkey.Client, key, token string, _ time.Duration) Result {
	err := c.Do(ctx, c.B().Arbitrary("SET").Keys(key).Args(token, "IFEQ", token).Build()).Error()
	return nilOK("SET IFEQ (no PX: the TTL is dropped)", err, "the lock expired or another client holds it")
}
