package lock

import (
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/valkey-io/valkey-go"
)

func init() { routes[endpoint.Cluster] = (*Config).clusterOption }

// The cluster topology (Valkey Cluster): the recipes open valkey-go's
// cluster client with every node as an init address. The lock key and its
// fence counter share a hash tag (lock:{job-1}, fence:{job-1}), so the
// fenced acquire's MULTI/SET NX/INCR/EXEC lands on one shard unchanged.
//
// DisableRetry still holds what it holds elsewhere: valkey-go follows MOVED
// and ASK whatever the setting (the node that redirected did not run the
// command, so sending it on is safe, and a MULTI block is sent on whole),
// while CLUSTERDOWN, TRYAGAIN and lost connections are retried only when
// retries are on. With them off, a CLUSTERDOWN reaches the recipe as an
// error reply (fail: the server did nothing) and a lost connection as a
// transport error (info: the command may have run).

// clusterOption is the cluster client's option: no single client, no
// Sentinel; valkey-go finds the slots with CLUSTER SHARDS/SLOTS.
func (c *Config) clusterOption(o valkey.ClientOption) valkey.ClientOption {
	o.InitAddress = append([]string(nil), c.Service.Addrs...)
	o.ShuffleInit = true
	return o
}
