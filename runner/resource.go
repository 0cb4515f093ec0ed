package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// resourceProc is the fenced resource, run as its own process as users deploy
// it; it dies with the runner (parent-death signal).
type resourceProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	// exe, dir and args start it again after a restart-db fault.
	exe, dir string
	args     []string
}

func startResource(ctx context.Context, exe, dir, mode, dsn string, runs []string) (*resourceProc, error) {
	ready := filepath.Join(dir, runfolder.ResourceAddr)
	args := []string{"resource", "serve", "--addr", "127.0.0.1:0", "--fence", mode, "--ready-file", ready}
	if dsn != "" {
		args = append(args, "--resource-dsn", dsn, "--schema", "run_"+strings.ReplaceAll(filepath.Base(dir), "-", "_"))
	} else {
		args = append(args, "--db", filepath.Join(dir, runfolder.ResourceDB))
	}
	for _, r := range runs {
		args = append(args, "--run", r)
	}
	return launchResource(ctx, exe, dir, args, os.O_TRUNC)
}

// launchResource starts the service and waits for its ready file; appendLog
// (os.O_APPEND) keeps the log of an earlier life after a restart.
func launchResource(ctx context.Context, exe, dir string, args []string, appendLog int) (*resourceProc, error) {
	ready := filepath.Join(dir, runfolder.ResourceAddr)
	_ = os.Remove(ready)
	logf, err := os.OpenFile(filepath.Join(dir, runfolder.ResourceLog), os.O_CREATE|os.O_WRONLY|appendLog, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create resource log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start resource service: %w", err)
	}
	p := &resourceProc{cmd: cmd, done: make(chan struct{}), exe: exe, dir: dir, args: args}
	go func() { _ = cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			p.addr = strings.TrimSpace(string(b))
			return p, nil
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(filepath.Join(dir, runfolder.ResourceLog))
			return nil, fmt.Errorf("resource service exited: %s", strings.TrimSpace(string(b)))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("resource service not ready after 20s, see %s", filepath.Join(dir, runfolder.ResourceLog))
		}
	}
}

// watchResource returns nil when ctx ends with the resource service alive
// (or restarted by the restart-db fault, which holds resMu while the old
// one is down), and an error naming the service and how it ended if it
// exited by any other hand first.
func (r *run) watchResource(ctx context.Context) error {
	for {
		r.resMu.Lock()
		p := r.res
		r.resMu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-p.done:
		}
		r.resMu.Lock()
		restarted := r.res != p
		r.resMu.Unlock()
		if !restarted {
			return fmt.Errorf("the resource service (pid %d) exited at %s (%v), not by a fault of the schedule",
				p.cmd.Process.Pid, time.Now().Format("15:04:05.000"), p.cmd.ProcessState)
		}
	}
}

// exited says whether the service's process has ended.
func (p *resourceProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// export writes the attempts log as resource.jsonl: from the service, or,
// once it is gone, from its database (the SQLite file, or PostgreSQL's
// schema), which holds every attempt it committed.
func (p *resourceProc) export(exe, out string) error {
	args := []string{"resource", "export", "--addr", p.addr, "--out", out}
	if p.exited() {
		args = []string{"resource", "export", "--out", out}
		for i := 0; i+1 < len(p.args); i++ {
			switch p.args[i] {
			case "--db", "--resource-dsn", "--schema":
				args = append(args, p.args[i], p.args[i+1])
			}
		}
	}
	cmd := exec.Command(exe, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("export attempts: %v: %s", err, b)
	}
	return nil
}

func (p *resourceProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
