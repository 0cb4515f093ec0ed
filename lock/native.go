package lock

import (
	"context"
	"time"

	"github.com/valkey-io/valkey-go"
)

// native is the Valkey 9 lock without Lua: every step checks the token on the
// server in one command.
func openNative(cfg Config) (Lock, error) {
	return openBasic(cfg, &basic{extend: nativeExtend, release: nativeRelease, safe: true})
}

// nativeExtend always passes PX: a successful SET drops the old TTL, so an
// extend without it would make the lock permanent. IFEQ on a missing key
// returns nil, so a late extend cannot bring an expired lock back.
func nativeExtend(ctx context.Context, c valkey.Client, key, token string, ttl time.Duration) Result {
	err := c.Do(ctx, c.B().Arbitrary("SET").Keys(key).Args(token, "IFEQ", token, "PX", ms(ttl)).Build()).Error()
	return nilOK("SET IFEQ PX", err, "the lock expired or another client holds it")
}

func nativeRelease(ctx context.Context, c valkey.Client, key, token string) Result {
	v, err := c.Do(ctx, c.B().Arbitrary("DELIFEQ").Keys(key).Args(token).Build()).AsInt64()
	return intReply("DELIFEQ", v, err, "the lock expired or another client holds it")
}
