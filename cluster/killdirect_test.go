package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Docker.Kill signals a container's process itself only when the pid's
// cgroup names the container, and returns once the process has exited,
// reaped or not (WaitGone): these are the two facts it stands on.
func TestDirectKillFacts(t *testing.T) {
	self, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", os.Getpid()))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	// A segment of this process's own cgroup paths stands for a container id.
	seg := ""
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		if i := strings.LastIndex(line, "/"); i >= 0 && line[i+1:] != "" {
			seg = line[i+1:]
		}
	}
	path := string(self)
	for _, tt := range []struct {
		name string
		pid  int
		id   string
		want bool
	}{
		{"a cgroup path that names the id", os.Getpid(), seg, seg != ""},
		{"no id", os.Getpid(), "", false},
		{"an id the cgroup does not name", os.Getpid(), "0123456789abcdef0123456789abcdef", false},
		{"a pid that does not exist", 1 << 30, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := containerProcess(tt.pid, tt.id); got != tt.want {
				t.Errorf("containerProcess(%d, %q) = %v, want %v (cgroup %q)", tt.pid, tt.id, got, tt.want, path)
			}
		})
	}

	// A child killed and not yet reaped is a zombie: gone for WaitGone,
	// which the direct kill waits with.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if WaitGone(cmd.Process.Pid, 200*time.Millisecond) {
		t.Fatalf("WaitGone returned for a live process")
	}
	if err := signalPID(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !WaitGone(cmd.Process.Pid, 5*time.Second) {
		t.Fatalf("WaitGone after SIGKILL: the unreaped zombie still counts as alive")
	}
}
