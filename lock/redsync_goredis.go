//go:build redsync_goredis

package lock

import (
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// RedsyncAdapter: this build drives redsync through its go-redis v9 adapter,
// which every redsync v4 since v4.8 has; the findings that pin a redsync from
// before the valkeygo adapter (v4.16.0) are built with it, before and after
// alike, so that only redsync's version differs between the two.
const RedsyncAdapter = "goredis"

// redsyncPrimaryPool: go-redis on the deployment, with go-redis's retries off
// (MaxRetries -1), as valkey-go's are in the default build.
func redsyncPrimaryPool(cfg Config) (redis.Pool, func(), error) {
	o := cfg.goRedisOptions()
	o.MaxRetries = -1
	c := goredislib.NewUniversalClient(o)
	return goredis.NewPool(c), func() { _ = c.Close() }, nil
}

func redsyncNodePool(_ Config, addr string) (redis.Pool, func(), error) {
	c := goredislib.NewClient(&goredislib.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	return goredis.NewPool(c), func() { _ = c.Close() }, nil
}
