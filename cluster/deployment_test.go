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
