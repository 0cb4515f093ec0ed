package checker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCheckerIsALeaf: the checker reads files and judges them; it needs no
// cluster runtime and no client library (it once pulled in Docker, etcd, gRPC
// and valkey-go, 215 third-party packages, through nemesis).
func TestCheckerIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const self = "github.com/lockjepsen/lockjepsen/"
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/docker/", "github.com/moby/", "go.etcd.io/", "google.golang.org/grpc",
			"github.com/valkey-io/", self + "nemesis", self + "cluster", self + "lock", self + "runner"} {
			if dep == banned || strings.HasPrefix(dep, strings.TrimSuffix(banned, "/")+"/") {
				t.Errorf("the checker depends on %s", dep)
			}
		}
	}
}
