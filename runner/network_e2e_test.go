package runner

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// The network faults end to end (--net-proxy: a toxiproxy proxy in front of
// every node). The expectations are the scenarios' own (scenario/network.go),
// each measured over 10 seeds before it went in (README, "Network faults").
// Every run also leaves no proxy listening once it has ended.
func TestNetworkScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		mutate   func(*Config)
		// events the nemesis must have logged: the fault did what it says.
		events []string
	}{
		{"net-baseline", func(c *Config) { c.TimeLimit = 10 * time.Second }, nil},
		{"net-latency", nil, []string{"net-latency", "net-latency-healed"}},
		{"net-timeout", nil, []string{"net-timeout", "net-timeout-healed"}},
		{"net-reset", nil, []string{"net-reset", "net-reset-healed"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			cfg := config(t, tt.scenario, tt.mutate)
			if !cfg.Cluster.NetProxy {
				t.Fatalf("scenario %s runs without --net-proxy", tt.scenario)
			}
			expectLesson(t, cfg, 0)
			assertNemesisLogged(t, cfg.Out, tt.events)
			assertProxiesClosed(t, cfg.Out)
		})
	}
}

// assertProxiesClosed reads the proxies' addresses from the run's cluster
// record and fails if any still accepts a connection.
func assertProxiesClosed(t *testing.T, out string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, runfolder.Cluster, cluster.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Nodes []cluster.Node `json:"nodes"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	proxies := 0
	for _, n := range st.Nodes {
		if n.Announce == "" {
			continue
		}
		proxies++
		if c, err := net.DialTimeout("tcp", n.Announce, time.Second); err == nil {
			c.Close()
			t.Errorf("%s's proxy %s still accepts connections after the run ended", n.Name, n.Announce)
		}
	}
	if proxies == 0 {
		t.Fatalf("the run's %s names no proxy: --net-proxy made none", cluster.StateFile)
	}
}
