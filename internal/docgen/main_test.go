package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// A page that differs from what the catalogs say fails here, naming the fix.
func TestDocsAreCurrent(t *testing.T) {
	pages, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for page, want := range pages {
		got, err := os.ReadFile(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale against the catalogs: run make docs and commit it", page)
		}
	}
}

// Every fault and scenario has its row: a catalog entry the tables skip
// would be a drift the staleness test cannot see.
func TestEveryEntryHasARow(t *testing.T) {
	tests := []struct {
		table string
		text  string
		names []string
	}{
		{"faults", faultsTable(), nemesis.Names()},
		{"scenarios", scenariosTable(), scenario.Names()},
	}
	for _, tt := range tests {
		for _, n := range tt.names {
			if !strings.Contains(tt.text, "| `"+n+"` |") {
				t.Errorf("the %s table has no row for %s", tt.table, n)
			}
		}
	}
}

// The deployments a fault is listed on are those a run accepts it on: the
// net faults need Valkey nodes to put a proxy in front of, which etcd and
// ZooKeeper lack (a row once claimed them).
func TestFaultDeploymentsFollowTheRefusals(t *testing.T) {
	tests := []struct {
		fault string
		want  string
	}{
		{"net-latency", "`sentinel`, `redlock`, `cluster`, `standalone`"},
		{"pause-client", "`sentinel`, `redlock`, `etcd`, `cluster`, `standalone`, `zookeeper`, `postgres`"},
		{"pause-pooler", "`postgres`"},
		{"cut-replication", "`sentinel`"},
		{"etcd-clock-bump", "none"},
	}
	for _, tt := range tests {
		f, err := nemesis.Lookup(tt.fault)
		if err != nil {
			t.Fatal(err)
		}
		if got := code(faultDeployments(f)); got != tt.want {
			t.Errorf("%s on %s, want %s", tt.fault, got, tt.want)
		}
	}
}

func TestFillNamesAMissingMarker(t *testing.T) {
	_, err := fill([]byte("# page\n"), block{page: "docs/x.md", name: "x", render: func() string { return "" }}, ".")
	if err == nil || !strings.Contains(err.Error(), "docs/x.md") || !strings.Contains(err.Error(), "generated: x") {
		t.Fatalf("fill on a page without markers: %v", err)
	}
}
