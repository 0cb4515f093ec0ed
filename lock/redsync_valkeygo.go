//go:build !redsync_goredis

package lock

import (
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/valkeygo"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeycompat"
)

// RedsyncAdapter is the client library under redsync's pools: valkey-go
// through redsync's valkeygo adapter (redsync v4.16.0 and later). A build
// with -tags redsync_goredis uses go-redis instead, for the redsync versions
// a finding pins from before valkeygo existed (scripts/pinned-build.sh).
const RedsyncAdapter = "valkeygo"

// redsyncPrimaryPool is the one pool of redsync on a Sentinel, standalone or
// cluster deployment: the recipe's own valkey-go connection options.
func redsyncPrimaryPool(cfg Config) (redis.Pool, func(), error) {
	c, err := Connect(cfg)
	if err != nil {
		return nil, nil, err
	}
	return valkeygo.NewPool(valkeycompat.NewAdapter(c)), c.Close, nil
}

// redsyncNodePool is one Redlock node's pool, retries and caching off as in
// every recipe of ours.
func redsyncNodePool(_ Config, addr string) (redis.Pool, func(), error) {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
		DisableRetry: true, DisableCache: true, DialCtxFn: hookedDial})
	if err != nil {
		return nil, nil, err
	}
	return valkeygo.NewPool(valkeycompat.NewAdapter(c)), c.Close, nil
}
