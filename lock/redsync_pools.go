package lock

import (
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/valkeygo"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeycompat"
)

// openRedsyncPools is redsync as its README uses it for Redlock:
// redsync.New(pool1, …, poolN), one pool per independent primary. The library
// is unchanged; only its drift factor follows --drift-factor.
func openRedsyncPools(cfg Config) (Lock, error) {
	var pools []redis.Pool
	var clients []valkey.Client
	for _, a := range cfg.Addrs {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{a}, ForceSingleClient: true,
			DisableRetry: true, DisableCache: true})
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, fmt.Errorf("connect to %s: %w", a, err)
		}
		clients = append(clients, c)
		pools = append(pools, valkeygo.NewPool(valkeycompat.NewAdapter(c)))
	}
	factor := cfg.DriftFactor
	if factor == 0 {
		factor = DefaultDriftFactor
	}
	return &redsyncLock{c: clients[0], others: clients[1:], rs: redsync.New(pools...),
		opts: []redsync.Option{redsync.WithDriftFactor(factor)}, mutexes: map[string]*redsync.Mutex{}}, nil
}

// Validity implements ValidityReporter: redsync's own Until (now + expiry −
// elapsed − drift at the last lock or extend).
func (l *redsyncLock) Validity(token string) time.Duration {
	if len(l.others) == 0 {
		return 0
	}
	m, found := l.mutex(token)
	if !found {
		return 0
	}
	return max(0, time.Until(m.Until()))
}
