package runner

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// RestartDB is the restart-db fault's hook (nemesis.DBRestarter): SIGKILL the
// resource service, which with SQLite is the database's one owner (committed
// transactions survive in the WAL), keep it down, and start it again on the
// same address so that clients reconnect to it. With --resource-dsn the
// service is restarted and PostgreSQL keeps running.
func (e env) RestartDB(ctx context.Context, down time.Duration) (string, error) {
	r := e.r
	r.resMu.Lock()
	defer r.resMu.Unlock()
	old := r.res
	if old == nil {
		return "", fmt.Errorf("no resource service to restart")
	}
	_ = syscall.Kill(-old.cmd.Process.Pid, syscall.SIGKILL)
	<-old.done
	t := time.NewTimer(down)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	args := append([]string(nil), old.args...)
	for i := range args {
		if args[i] == "--addr" && i+1 < len(args) {
			args[i+1] = old.addr // the clients know this address
		}
	}
	var p *resourceProc
	var err error
	// The port was just freed; a few tries cover a slow kernel.
	for try := 0; try < 20; try++ {
		if p, err = launchResource(context.WithoutCancel(ctx), old.exe, old.dir, args, os.O_APPEND); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("restart resource service: %w", err)
	}
	r.res = p
	what := "the resource service and its SQLite database"
	if r.cfg.ResourceDSN != "" {
		what = "the resource service (PostgreSQL kept running)"
	}
	return fmt.Sprintf("%s (pid %d, was %d) on %s", what, p.cmd.Process.Pid, old.cmd.Process.Pid, p.addr), nil
}
