package lock

import (
	"context"
	"time"

	"github.com/valkey-io/valkey-go"
)

// The Redis-era scripts: GET, compare, act. valkey.Lua sends EVALSHA and falls
// back to EVAL on NOSCRIPT, as Redis-era libraries do after a failover empties
// the script cache.
var (
	luaExtend = valkey.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
	luaDelete = valkey.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
)

func openLua(cfg Config) (Lock, error) {
	return openBasic(cfg, &basic{extend: luaExtendFn, release: luaReleaseFn, safe: true})
}

func luaExtendFn(ctx context.Context, c valkey.Client, key, token string, ttl time.Duration) Result {
	v, err := luaExtend.Exec(ctx, c, []string{key}, []string{token, ms(ttl)}).AsInt64()
	return intReply("EVALSHA compare-PEXPIRE", v, err, "the lock expired or another client holds it")
}

func luaReleaseFn(ctx context.Context, c valkey.Client, key, token string) Result {
	v, err := luaDelete.Exec(ctx, c, []string{key}, []string{token}).AsInt64()
	return intReply("EVALSHA compare-DEL", v, err, "the lock expired or another client holds it")
}
