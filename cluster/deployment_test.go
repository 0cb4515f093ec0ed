package cluster

import "testing"

// Replicated tells the runner to wait, between two faults, for "one primary
// with every live replica linked to it". A deployment with more than one
// primary must not say so: Valkey Cluster once did, and every back-to-back
// sweep trial on it stopped its fault schedule after the first fault, the
// other shards' primaries read as replicas that never link.
func TestReplicatedMeansOnePrimary(t *testing.T) {
	for _, name := range Topologies {
		t.Run(name, func(t *testing.T) {
			d, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			c := Defaults()
			c.Topology = name
			d.Defaults(&c, func(string) bool { return false })
			primaries := 0
			for _, n := range d.Layout(c) {
				if n.Kind == RolePrimary {
					primaries++
				}
			}
			if d.Replicated() && primaries != 1 {
				t.Errorf("%s: Replicated() with %d primaries in its layout; the wait between faults needs exactly one", name, primaries)
			}
		})
	}
}

// The default is the deployment registered with rank 0: what a config that
// names no topology runs, first in --topology's list, and the one a second
// rank-0 registration may not displace.
func TestTheDefaultIsRankZero(t *testing.T) {
	def := DefaultTopology()
	if def == "" || Topologies[0] != def {
		t.Fatalf("DefaultTopology() = %q, Topologies = %v: want the first of the list", def, Topologies)
	}
	d, err := Lookup("")
	if err != nil || d.Name() != def {
		t.Fatalf("Lookup(\"\") = %v, %v: want %s", d, err, def)
	}
	if got := (&Config{}).TopologyName(); got != def {
		t.Errorf("TopologyName() of a config naming none = %q, want %q", got, def)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("a second deployment registered with rank 0 did not panic")
		}
		if DefaultTopology() != def {
			t.Errorf("the default became %q", DefaultTopology())
		}
	}()
	Register(0, named{name: "second-default"})
}

// named is a Deployment that only answers Name, for the registry's own checks.
type named struct {
	Deployment
	name string
}

func (n named) Name() string { return n.name }
