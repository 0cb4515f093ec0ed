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

// spec is what this package knows of a protocol: the variable the exec
// protocol hands its endpoints in, whether they are a DSN rather than
// addresses, and whether valkey-go speaks it. A protocol is a constant above,
// its place in Protocols and its entry here.
type spec struct {
	env    string
	dsn    bool // the endpoints are Set.DSN
	one    bool // only Addrs[0], the one server
	valkey bool
	// each: every address is a primary of its own, with no replication
	// between them; a key is held where a majority of them hold it.
	each bool
}

var specs = map[Protocol]spec{
	// The Sentinels travel in LOCKJEPSEN_SENTINELS, which Env always sets.
	Sentinel: {valkey: true},
	Valkey:   {env: "LOCKJEPSEN_ADDR", one: true, valkey: true},
	// Every node is a seed; the program's cluster client finds the slots
	// itself and follows MOVED and ASK as it would in production.
	Cluster: {env: "LOCKJEPSEN_CLUSTER_NODES", valkey: true},
	// The N independent primaries, in the order the built-in redlock recipe
	// tries them; the quorum is the program's to count.
	Redlock:   {env: "LOCKJEPSEN_REDLOCK_NODES", valkey: true, each: true},
	Etcd:      {env: "LOCKJEPSEN_ETCD_ENDPOINTS"},
	ZooKeeper: {env: "LOCKJEPSEN_ZK_SERVERS"},
	// The connection string the built-in recipes dial: the pooler's when
	// the deployment runs one, the primary's otherwise.
	Postgres: {env: "LOCKJEPSEN_PG_DSN", dsn: true},
}

// Valkey says whether valkey-go and the Valkey recipes speak p.
func (p Protocol) Valkey() bool { return specs[p].valkey }

// Independent says whether p's addresses are independent primaries, each
// spoken to on its own (Node), a key held where a majority holds it: a
// client opens one connection per address and counts the quorum itself.
func (p Protocol) Independent() bool { return specs[p].each }

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
	sp, ok := specs[s.Protocol]
	switch {
	case s.Protocol == "":
		return fmt.Errorf("no endpoints: no deployment's addresses were given")
	case !ok:
		return fmt.Errorf("endpoints: unknown protocol %q: want one of %s", s.Protocol, Names(Protocols))
	case sp.dsn && s.DSN == "":
		return fmt.Errorf("endpoints %s: no DSN", s.Protocol)
	case !sp.dsn && len(s.Addrs) == 0:
		return fmt.Errorf("endpoints %s: no addresses", s.Protocol)
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
	switch sp := specs[s.Protocol]; {
	case sp.env == "":
	case sp.dsn:
		env = append(env, sp.env+"="+s.DSN)
	case sp.one:
		env = append(env, sp.env+"="+s.Addr())
	default:
		env = append(env, sp.env+"="+join(s.Addrs))
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

// IsEnvName says whether name is one of the variables Env sets: a program
// inherits none of them from lockjepsen's own environment, so that it sees
// only this run's deployment.
func IsEnvName(name string) bool {
	switch name {
	case "LOCKJEPSEN_SERVICE", "LOCKJEPSEN_SENTINELS", "LOCKJEPSEN_MASTER_SET", "LOCKJEPSEN_DIAL_MAP":
		return true
	}
	for _, sp := range specs {
		if sp.env != "" && sp.env == name {
			return true
		}
	}
	return false
}
