package lock

import (
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/valkey-io/valkey-go"
)

func init() { routes[endpoint.Sentinel] = (*Config).sentinelOption }

// sentinelOption is how a client reaches the primary a Sentinel deployment
// watches: valkey-go asks the Sentinels (the Set's addresses) for the master
// set's primary and follows it across a failover, reconnecting when they
// name another.
func (c *Config) sentinelOption(o valkey.ClientOption) valkey.ClientOption {
	o.InitAddress = c.Service.Addrs
	o.Sentinel = valkey.SentinelOption{MasterSet: c.Service.Master()}
	return o
}
