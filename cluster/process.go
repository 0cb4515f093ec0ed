package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a server process a runtime started: any runtime, cluster's own
// and a deployment's in its folder, starts its processes through Spawn.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
}

// Spawn says how to start one server process. It starts in its own process
// group, so that a Ctrl-C aimed at lockjepsen's terminal does not reach the
// server before the runner decides, and unless Detached with a
// parent-death signal, so that a crashed or killed lockjepsen leaves no
// server behind.
type Spawn struct {
	Bin        string
	Args, Env  []string // Env is added to lockjepsen's own
	Dir        string   // working directory; "" for lockjepsen's
	Log        string   // stdout and stderr are appended here
	Detached   bool     // outlives lockjepsen (cluster up)
	Credential *syscall.Credential
}

// Start starts the process and reaps it when it exits.
func (s Spawn) Start() (*Proc, error) {
	out, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.Log, err)
	}
	defer out.Close()
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.Credential}
	if !s.Detached {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Bin, err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func spawn(bin string, args, env []string, stdoutPath string, detached bool) (*Proc, error) {
	return Spawn{Bin: bin, Args: args, Env: env, Log: stdoutPath, Detached: detached}.Start()
}

// PID is the process's pid.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process itself (not its group).
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited reports whether the process has exited and been reaped: its pid,
// and the process group it led, may belong to another process by now.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// CopyFile copies src to dst (a node's log into the run folder).
func CopyFile(src, dst string) error {
	if src == dst {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// signalPID sends sig to a process; used for nodes this process did not start
// (a detached cluster read back from its state file).
func signalPID(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("no process")
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to pid %d: %w", sig, pid, err)
	}
	return nil
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3 is the state; Z is a zombie awaiting its parent.
	for i := 0; i < len(b); i++ {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] != 'Z'
		}
	}
	return true
}

// WaitGone waits until pid has exited (a zombie counts as gone), at most
// timeout; it reports whether it did.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return !alive(pid)
}

func syscallKill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
