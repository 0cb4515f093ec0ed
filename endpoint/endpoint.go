// Package endpoint is how a client reaches a lock service: the protocol the
// service speaks and where it listens. A deployment hands out one Set, a
// recipe says which protocols it speaks, and the exec protocol passes the
// Set to a team's own program as environment variables; nothing between
// them knows a deployment by name.
package endpoint

import (
	"fmt"
	"sort"
	"strings"
)

// Protocol is what a client speaks to reach the service, and so what Addrs
// hold.
type Protocol string

const (
	// Sentinel: Addrs are Sentinels; the primary is the one they name for
	// MasterSet.
	Sentinel Protocol = "sentinel"
	// Valkey: Addrs[0] is one server, spoken to directly.
	Valkey Protocol = "valkey"
	// Redlock: Addrs are N independent primaries, a majority needed.
	Redlock Protocol = "redlock"
	// Cluster: Addrs are Valkey Cluster nodes; the client follows MOVED and
	// ASK.
	Cluster Protocol = "valkey-cluster"
	// Etcd: Addrs are the members' client endpoints.
	Etcd Protocol = "etcd"
	// ZooKeeper: Addrs are the members' client ports.
	ZooKeeper Protocol = "zookeeper"
	// Postgres: DSN is the connection string (the database, or its pooler).
	Postgres Protocol = "postgres"
)

// DefaultMasterSet is the master set lockjepsen's Sentinels watch.
const DefaultMasterSet = "lockjepsen"

// Protocols is every protocol, in a fixed order.
var Protocols = []Protocol{Sentinel, Valkey, Redlock, Cluster, Etcd, ZooKeeper, Postgres}

// Valkey says whether valkey-go and the Valkey recipes speak p.
func (p Protocol) Valkey() bool {
	return p == Sentinel || p == Valkey || p == Redlock || p == Cluster
}

// Set is one service's endpoints.
type Set struct {
	Protocol  Protocol `json:"protocol,omitempty"`
	Addrs     []string `json:"addrs,omitempty"`
	MasterSet string   `json:"master_set,omitempty"` // Sentinel only
	DSN       string   `json:"dsn,omitempty"`        // Postgres only
	// DialMap (--net-proxy) maps a node's announced address, which is what
	// Sentinel hands out and the replicas' path, to the proxy the lock
	// clients dial instead: replication and the clients cross different
	// proxies, so a fault can slow one alone. Addresses not in it (the
	// Sentinels') are dialed as they are.
	DialMap map[string]string `json:"dial_map,omitempty"`
}

// One is a single Valkey server, spoken to directly.
func One(addr string) Set { return Set{Protocol: Valkey, Addrs: []string{addr}} }

// Node is one server of the set's, spoken to directly, through the same
// dial map: a capability check of a node, a redirect followed, one of
// Redlock's primaries on its own.
func (s Set) Node(addr string) Set {
	return Set{Protocol: Valkey, Addrs: []string{addr}, DialMap: s.DialMap}
}

// Master is the Sentinel master set to ask for, DefaultMasterSet unless
// one was given.
func (s Set) Master() string {
	if s.MasterSet == "" {
		return DefaultMasterSet
	}
	return s.MasterSet
}

// Empty: no service to reach (a deployment not started yet).
func (s Set) Empty() bool { return s.Protocol == "" }

// Addr is the first address ("" when there is none): the one server of
// Valkey, the node a capability check asks on Redlock.
func (s Set) Addr() string {
	if len(s.Addrs) == 0 {
		return ""
	}
	return s.Addrs[0]
}

// Dial is the address to dial for addr: its DialMap entry, or addr.
func (s Set) Dial(addr string) string {
	if to, ok := s.DialMap[addr]; ok {
		return to
	}
	return addr
}

// Validate says what is missing for the protocol, naming it.
func (s Set) Validate() error {
	switch s.Protocol {
	case "":
		return fmt.Errorf("no endpoints: no deployment's addresses were given")
	case Postgres:
		if s.DSN == "" {
			return fmt.Errorf("endpoints %s: no DSN", s.Protocol)
		}
	case Sentinel, Valkey, Redlock, Cluster, Etcd, ZooKeeper:
		if len(s.Addrs) == 0 {
			return fmt.Errorf("endpoints %s: no addresses", s.Protocol)
		}
	default:
		return fmt.Errorf("endpoints: unknown protocol %q: want one of %s", s.Protocol, Names(Protocols))
	}
	return nil
}

// Names joins protocols for a message.
func Names(ps []Protocol) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return strings.Join(out, ", ")
}

// Env is the Set as the exec protocol hands it to a program
// (docs/protocol.md, "Environment"): LOCKJEPSEN_SERVICE names the protocol,
// and one variable per protocol holds its addresses, so a program reads the
// one its library speaks. LOCKJEPSEN_SENTINELS and LOCKJEPSEN_MASTER_SET
// are always set (the Sentinels empty off Sentinel), as programs written
// before the other deployments expect.
func (s Set) Env() []string {
	join := func(a []string) string { return strings.Join(a, ",") }
	var sentinels string
	if s.Protocol == Sentinel {
		sentinels = join(s.Addrs)
	}
	env := []string{"LOCKJEPSEN_SERVICE=" + string(s.Protocol), "LOCKJEPSEN_SENTINELS=" + sentinels, "LOCKJEPSEN_MASTER_SET=" + s.Master()}
	switch s.Protocol {
	case Valkey:
		env = append(env, "LOCKJEPSEN_ADDR="+s.Addr())
	case ZooKeeper:
		env = append(env, "LOCKJEPSEN_ZK_SERVERS="+join(s.Addrs))
	case Cluster:
		// Every node is a seed; the program's cluster client finds the
		// slots itself and follows MOVED and ASK as it would in production.
		env = append(env, "LOCKJEPSEN_CLUSTER_NODES="+join(s.Addrs))
	case Redlock:
		// The N independent primaries, in the order the built-in redlock
		// recipe tries them; the quorum is the program's to count.
		env = append(env, "LOCKJEPSEN_REDLOCK_NODES="+join(s.Addrs))
	case Etcd:
		env = append(env, "LOCKJEPSEN_ETCD_ENDPOINTS="+join(s.Addrs))
	case Postgres:
		// The connection string the built-in recipes dial: the pooler's
		// when the deployment runs one, the primary's otherwise.
		env = append(env, "LOCKJEPSEN_PG_DSN="+s.DSN)
	}
	if len(s.DialMap) > 0 {
		// announced=dial pairs, sorted so that the environment of two runs
		// of one seed is the same.
		pairs := make([]string, 0, len(s.DialMap))
		for from, to := range s.DialMap {
			pairs = append(pairs, from+"="+to)
		}
		sort.Strings(pairs)
		env = append(env, "LOCKJEPSEN_DIAL_MAP="+join(pairs))
	}
	return env
}

// envNames are every variable Env may set: a program inherits none of them
// from lockjepsen's own environment, so that it sees only this run's
// deployment.
var envNames = map[string]bool{
	"LOCKJEPSEN_SERVICE": true, "LOCKJEPSEN_SENTINELS": true, "LOCKJEPSEN_MASTER_SET": true, "LOCKJEPSEN_ADDR": true,
	"LOCKJEPSEN_CLUSTER_NODES": true, "LOCKJEPSEN_REDLOCK_NODES": true, "LOCKJEPSEN_ETCD_ENDPOINTS": true,
	"LOCKJEPSEN_ZK_SERVERS": true, "LOCKJEPSEN_PG_DSN": true, "LOCKJEPSEN_DIAL_MAP": true,
}

// IsEnvName says whether name is one of the variables Env sets.
func IsEnvName(name string) bool { return envNames[name] }
