// Package testbin builds the lockjepsen binary for a test package's
// end-to-end tests, once, from its TestMain: the runs' clients are that
// binary's processes, so a test of the code under test needs it built from
// the same tree.
package testbin

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// Main builds cmd/lockjepsen (cmdDir, relative to the test's package) into
// a temporary folder, sets *exe to it, runs the tests and exits with their
// code, removing the folder. A failed build exits 2 with the compiler's
// output on stderr.
func Main(run func() int, cmdDir string, exe *string) {
	dir, err := os.MkdirTemp("", "lockjepsen-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	*exe = filepath.Join(dir, "lockjepsen")
	build := exec.Command("go", "build", "-o", *exe, cmdDir)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build lockjepsen:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// AssertNoProcessesLeft reads a run folder's cluster state file and checks
// that every node the run started is gone, and that no process whose command
// line names the run folder (a fault's cache instance, a client) outlived it.
func AssertNoProcessesLeft(t *testing.T, out string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "cluster", cluster.StateFile))
	if err != nil {
		t.Fatalf("no cluster state: %v", err)
	}
	var st struct {
		Nodes []cluster.Node `json:"nodes"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.PID != 0 && syscall.Kill(n.PID, 0) == nil {
			t.Errorf("%s (pid %d) outlived the run", n.Name, n.PID)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), out+string(filepath.Separator)) {
			t.Errorf("a process outlived the run (%s): %s", f, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}
