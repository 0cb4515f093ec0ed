package runner

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// fakeHandle stands for a client whose pid is now another process's: the
// pid of a sleep this test owns, and a Done already closed.
type fakeHandle struct {
	pid  int
	done chan struct{}
}

func (f fakeHandle) PID() int                              { return f.pid }
func (f fakeHandle) Events() <-chan history.Event          { return nil }
func (f fakeHandle) SetClock(time.Duration, float64) error { return nil }
func (f fakeHandle) Stop()                                 {}
func (f fakeHandle) Wait() error                           { return nil }
func (f fakeHandle) Done() <-chan struct{}                 { return f.done }

// A client that has exited is never signalled: its pid group may be another
// test's Valkey node by then.
func TestNoSignalToAnExitedClient(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	done := make(chan struct{})
	close(done)
	h := fakeHandle{pid: cmd.Process.Pid, done: done}
	for _, sig := range []string{"STOP", "CONT"} {
		if err := signalClient(h, sig); err == nil || !strings.Contains(err.Error(), "exited") {
			t.Errorf("SIG%s to an exited client: %v, want an error saying it exited", sig, err)
		}
	}
	if err := signalKill(h); err == nil {
		t.Error("SIGKILL to an exited client: no error")
	}
	if !processAlive(cmd.Process.Pid) {
		t.Fatal("the process now holding the pid was killed")
	}
	// A live client is signalled as before.
	live := fakeHandle{pid: cmd.Process.Pid, done: make(chan struct{})}
	if err := signalClient(live, "STOP"); err != nil {
		t.Fatal(err)
	}
	_ = signalClient(live, "CONT")
}
