package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestReduceDropsImpliedImports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		g, want map[string][]string
	}{
		{"a chain keeps its links", map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil},
			map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}},
		{"a shortcut over a chain is implied", map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": nil},
			map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}},
		{"a shortcut over two hops is implied", map[string][]string{"a": {"d", "b"}, "b": {"c"}, "c": {"d"}, "d": nil},
			map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": nil}},
		{"two independent imports stay", map[string][]string{"a": {"c", "b"}, "b": nil, "c": nil},
			map[string][]string{"a": {"b", "c"}, "b": nil, "c": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reduce(tc.g); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("reduce(%v) = %v, want %v", tc.g, got, tc.want)
			}
		})
	}
}

// The drawing is of this tree: every deployment folder is a package in the
// box, and the runner links each of them in.
func TestPackagesGraphShowsEveryDeploymentFolder(t *testing.T) {
	s, err := packagesGraph("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"sentinel", "standalone", "redlock", "valkeycluster", "etcd", "zookeeper", "postgres"} {
		if !strings.Contains(s, "deployments_"+d+"["+d+" · ") || !strings.Contains(s, "runner --> deployments_"+d+"\n") {
			t.Errorf("the graph lacks deployments/%s or the runner's import of it:\n%s", d, s)
		}
	}
}
