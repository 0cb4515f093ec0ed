package lock

import (
	"context"
	"time"

	"github.com/valkey-io/valkey-go"
)

// unsafe is the anti-pattern the SET page's lock pattern still shows: extend
// and release never look at the token, so a client whose lease expired
// extends or deletes whoever holds the lock now. Kept so users can watch it.
func openUnsafe(cfg Config) (Lock, error) {
	return openBasic(cfg, &basic{extend: unsafeExtend, release: unsafeRelease, safe: false})
}

func unsafeExtend(ctx context.Context, c valkey.Client, key, _ string, ttl time.Duration) Result {
	v, err := c.Do(ctx, c.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build()).AsInt64()
	return intReply("PEXPIRE", v, err, "no lock key to extend")
}

func unsafeRelease(ctx context.Context, c valkey.Client, key, _ string) Result {
	v, err := c.Do(ctx, c.B().Del().Key(key).Build()).AsInt64()
	return intReply("DEL", v, err, "no lock key to delete")
}
