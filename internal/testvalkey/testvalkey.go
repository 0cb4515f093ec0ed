// Package testvalkey starts one bare Valkey server for a test: no
// persistence, a free port, its own process group, stopped with the test.
package testvalkey

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// Start runs bin (a valkey-server or redis-server) on 127.0.0.1 and returns
// its address once it accepts connections.
func Start(t testing.TB, bin string) string {
	t.Helper()
	ports, err := cluster.FreePorts(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", filepath.Join(dir, "server.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s did not come up: %v", bin, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
