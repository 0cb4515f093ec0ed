package endpoint

import (
	"slices"
	"strings"
	"testing"
)

func TestEnvNamesTheProtocolsOwnVariable(t *testing.T) {
	nodes := []string{"127.0.0.1:7000", "127.0.0.1:7001"}
	for _, tc := range []struct {
		set  Set
		want []string // variables beyond LOCKJEPSEN_SERVICE, _SENTINELS, _MASTER_SET
	}{
		{Set{Protocol: Sentinel, Addrs: nodes, MasterSet: "m"}, nil},
		{One(nodes[0]), []string{"LOCKJEPSEN_ADDR=127.0.0.1:7000"}},
		{Set{Protocol: Redlock, Addrs: nodes}, []string{"LOCKJEPSEN_REDLOCK_NODES=127.0.0.1:7000,127.0.0.1:7001"}},
		{Set{Protocol: Cluster, Addrs: nodes}, []string{"LOCKJEPSEN_CLUSTER_NODES=127.0.0.1:7000,127.0.0.1:7001"}},
		{Set{Protocol: Etcd, Addrs: nodes}, []string{"LOCKJEPSEN_ETCD_ENDPOINTS=127.0.0.1:7000,127.0.0.1:7001"}},
		{Set{Protocol: ZooKeeper, Addrs: nodes}, []string{"LOCKJEPSEN_ZK_SERVERS=127.0.0.1:7000,127.0.0.1:7001"}},
		{Set{Protocol: Postgres, DSN: "postgres://x"}, []string{"LOCKJEPSEN_PG_DSN=postgres://x"}},
		{Set{Protocol: Sentinel, Addrs: nodes[:1], DialMap: map[string]string{"b:2": "y:2", "a:1": "x:1"}},
			[]string{"LOCKJEPSEN_DIAL_MAP=a:1=x:1,b:2=y:2"}},
	} {
		t.Run(string(tc.set.Protocol), func(t *testing.T) {
			if err := tc.set.Validate(); err != nil {
				t.Fatal(err)
			}
			env := tc.set.Env()
			for _, kv := range env {
				// Or a program would inherit it from the shell on a run that does not set it.
				if name, _, _ := strings.Cut(kv, "="); !IsEnvName(name) {
					t.Errorf("%s is set but not among the names a program never inherits", name)
				}
			}
			if env[0] != "LOCKJEPSEN_SERVICE="+string(tc.set.Protocol) {
				t.Errorf("first variable %q, want the protocol", env[0])
			}
			sentinels := ""
			if tc.set.Protocol == Sentinel {
				sentinels = strings.Join(tc.set.Addrs, ",")
			}
			if env[1] != "LOCKJEPSEN_SENTINELS="+sentinels {
				t.Errorf("%q: the Sentinels are set on Sentinel only, and the variable always", env[1])
			}
			if !strings.HasPrefix(env[2], "LOCKJEPSEN_MASTER_SET=") || env[2] == "LOCKJEPSEN_MASTER_SET=" {
				t.Errorf("%q: the master set always has a value", env[2])
			}
			if !slices.Equal(env[3:], tc.want) && !(len(env) == 3 && tc.want == nil) {
				t.Errorf("env %q, want %q after the first three", env[3:], tc.want)
			}
		})
	}
}

// A protocol is a constant, its place in Protocols and its spec: one without
// the other would be unknown to Validate or missing from the lists.
func TestEveryProtocolHasItsSpec(t *testing.T) {
	for _, p := range Protocols {
		if _, ok := specs[p]; !ok {
			t.Errorf("%s has no spec", p)
		}
	}
	if len(specs) != len(Protocols) {
		t.Errorf("%d specs for %d protocols", len(specs), len(Protocols))
	}
}

func TestValidateNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		set  Set
		want string
	}{
		{Set{}, "no deployment's addresses"},
		{Set{Protocol: Etcd}, "etcd: no addresses"},
		{Set{Protocol: Postgres, Addrs: []string{"x"}}, "postgres: no DSN"},
		{Set{Protocol: "memcached", Addrs: []string{"x"}}, `unknown protocol "memcached"`},
	} {
		err := tc.set.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.set, err, tc.want)
		}
	}
}

func TestDialFollowsTheMap(t *testing.T) {
	s := Set{DialMap: map[string]string{"a:1": "x:1"}}
	if s.Dial("a:1") != "x:1" || s.Dial("b:2") != "b:2" {
		t.Fatalf("Dial: %q %q", s.Dial("a:1"), s.Dial("b:2"))
	}
}

func TestNodeKeepsTheDialMapAndMasterHasADefault(t *testing.T) {
	s := Set{Protocol: Redlock, Addrs: []string{"a:1", "b:2"}, DialMap: map[string]string{"b:2": "y:2"}}
	n := s.Node("b:2")
	if n.Protocol != Valkey || n.Addr() != "b:2" || n.Dial("b:2") != "y:2" {
		t.Fatalf("Node: %+v", n)
	}
	if (Set{}).Master() != DefaultMasterSet || (Set{MasterSet: "m"}).Master() != "m" {
		t.Fatalf("Master: %q %q", (Set{}).Master(), (Set{MasterSet: "m"}).Master())
	}
}

// Only Redlock's N primaries are each a service of their own: a client
// that took another protocol's addresses for independent primaries would
// count a quorum of replicas or of Sentinels.
func TestIndependentIsRedlocksAlone(t *testing.T) {
	for _, p := range Protocols {
		if got, want := p.Independent(), p == Redlock; got != want {
			t.Errorf("%s.Independent() = %v, want %v", p, got, want)
		}
	}
}
