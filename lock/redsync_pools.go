package lock

import (
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
)

// openRedsyncPools is redsync as its README uses it for Redlock:
// redsync.New(pool1, …, poolN), one pool per independent primary. The library
// is unchanged; only its drift factor follows --drift-factor.
func openRedsyncPools(cfg Config) (Lock, error) {
	var pools []redis.Pool
	var closers []func()
	for _, a := range cfg.Service.Addrs {
		p, closer, err := redsyncNodePool(cfg, a)
		if err != nil {
			for _, c := range closers {
				c()
			}
			return nil, fmt.Errorf("connect to %s: %w", a, err)
		}
		closers = append(closers, closer)
		pools = append(pools, p)
	}
	factor := cfg.DriftFactor
	if factor == 0 {
		factor = DefaultDriftFactor
	}
	return &redsyncLock{closers: closers, pools: len(pools), rs: redsync.New(pools...),
		opts: []redsync.Option{redsync.WithDriftFactor(factor)}, mutexes: map[string]*redsync.Mutex{}, name: Redsync}, nil
}

// Validity implements ValidityReporter: redsync's own Until (now + expiry −
// elapsed − drift at the last lock or extend).
func (l *redsyncLock) Validity(token string) time.Duration {
	if l.pools < 2 {
		return 0
	}
	m, found := l.mutex(token)
	if !found {
		return 0
	}
	return max(0, time.Until(m.Until()))
}
