package cluster

// The docker runtime's signals to a node's process: start, kill, stop,
// pause and resume, restart, and its clock's offset.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

func (d *Docker) start(ctx context.Context, name string) error {
	n, id, err := d.container(name)
	if err != nil {
		return err
	}
	// A kill straight to the process (Kill) returns before the daemon has
	// seen the exit; a start before then is refused as already running.
	if err := d.waitStopped(ctx, id); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	if _, err := d.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return d.withLog(n, fmt.Errorf("start %s: %w", name, err))
	}
	pid, err := d.pid(ctx, id)
	if err != nil {
		return err
	}
	if pid == 0 {
		return d.withLog(n, fmt.Errorf("%s exited as soon as it started", name))
	}
	d.update(name, func(x *Node) { x.PID, x.Killed, x.Paused = pid, false, false })
	return nil
}

// pid is the host pid of the container's process, 0 when it is not running.
func (d *Docker) pid(ctx context.Context, id string) (int, error) {
	r, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	if r.Container.State == nil || !r.Container.State.Running {
		return 0, nil
	}
	return r.Container.State.Pid, nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Kill sends SIGKILL to the node's process and returns once it is dead.
//
// On the docker host the signal goes straight to the container's process
// (kill(2) on its host pid, once its cgroup names the container): the
// daemon's kill also waits out its own bookkeeping of the exit, and took
// 0.7-2.3 s a kill with three failover races side by side (load 12), long
// enough for Sentinel to give up a failover whose replicas the race had
// paused and not yet resumed (runCutReplication). The daemon catches up
// before the container starts again (start waits for it). Inside the runner
// container the host's pids are not ours, and the daemon kills; so it does
// for a paused container, which a cgroup v1 freezer would hold.
func (d *Docker) Kill(name string) error {
	n, id, err := d.container(name)
	if err != nil {
		return err
	}
	if n.PID == 0 {
		return fmt.Errorf("%s is already down", name)
	}
	ctx, cancel := apiCtx()
	defer cancel()
	if n.Paused || !containerProcess(n.PID, id) {
		if _, err := d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			return fmt.Errorf("SIGKILL %s: %w", name, err)
		}
		if err := d.waitStopped(ctx, id); err != nil {
			return fmt.Errorf("SIGKILL %s: %w", name, err)
		}
	} else {
		// A zombie counts as gone: its sockets closed at exit, which is what
		// a kill is for. When a pid namespace's first process dies the
		// kernel kills and reaps the rest before it, so a container whose
		// entrypoint starts the node is dead with it.
		if err := signalPID(n.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("SIGKILL %s: %w", name, err)
		}
		if !WaitGone(n.PID, 30*time.Second) {
			return fmt.Errorf("SIGKILL %s: pid %d still alive after 30 s", name, n.PID)
		}
	}
	d.dropConn(n.Addr)
	d.update(name, func(x *Node) { x.PID, x.Killed, x.Paused = 0, true, false })
	return nil
}

// containerProcess says whether pid, as this process sees it, is the
// container's: its cgroup path names the container's id (cgroup v1 and v2,
// systemd and cgroupfs drivers alike).
func containerProcess(pid int, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && id != "" && strings.Contains(string(b), id)
}

func (d *Docker) waitStopped(ctx context.Context, id string) error {
	for {
		pid, err := d.pid(ctx, id)
		if err != nil {
			return err
		}
		if pid == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %s still running: %w", shortID(id), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops the container gracefully (SIGTERM, SIGKILL after 10 s).
func (d *Docker) Stop(name string) error {
	n, id, err := d.container(name)
	if err != nil {
		return err
	}
	if n.PID == 0 {
		return nil
	}
	ctx, cancel := apiCtx()
	defer cancel()
	if n.Paused {
		_, _ = d.api.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	timeout := 10
	if _, err := d.api.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout}); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	d.dropConn(n.Addr)
	d.update(name, func(x *Node) { x.PID, x.Killed, x.Paused = 0, true, false })
	return nil
}

// Pause freezes the container (cgroup freezer): like SIGSTOP, the node keeps
// its sockets and answers nothing, and it cannot notice or handle it.
func (d *Docker) Pause(name string) error { return d.freeze(name, true) }

// Resume thaws a paused container.
func (d *Docker) Resume(name string) error { return d.freeze(name, false) }

func (d *Docker) freeze(name string, paused bool) error {
	n, id, err := d.container(name)
	if err != nil {
		return err
	}
	if n.PID == 0 {
		return fmt.Errorf("%s is down", name)
	}
	ctx, cancel := apiCtx()
	defer cancel()
	verb := "pause"
	if paused {
		_, err = d.api.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	} else {
		verb = "unpause"
		_, err = d.api.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	d.update(name, func(x *Node) { x.Paused = paused })
	return nil
}

// Restart starts the node's container again (killing it first if it runs). As
// a replica, the config in the bind-mounted directory is rewritten to follow
// the current primary first; the container keeps its addresses.
func (d *Docker) Restart(ctx context.Context, name string, mode RestartMode) error {
	n, _, err := d.container(name)
	if err != nil {
		return err
	}
	if n.PID != 0 {
		if err := d.Kill(name); err != nil {
			return err
		}
	}
	// A redlock node comes back as the primary it was (its own config; the
	// nemesis's kill-node says so); a service's member with its data dir.
	if d.svc == nil && !n.Watches() && mode == AsReplica && d.cfg.valkey().RejoinsAsReplica() {
		if err := d.writeConfig(ctx, n, true); err != nil {
			return err
		}
	}
	if err := d.start(ctx, name); err != nil {
		return err
	}
	if d.svc != nil {
		if err := d.svc.AwaitAnswer(ctx, name); err != nil {
			return d.withLog(n, err)
		}
		return nil
	}
	if err := d.topo.WaitPing(ctx, n.Addr); err != nil {
		return d.withLog(n, err)
	}
	return nil
}

// SetClockOffset moves a node's wall clock: the libfaketime timestamp file in
// the bind-mounted directory is replaced atomically (rename), and the call
// returns once the process in the container shows it (Local.setClock).
func (d *Docker) SetClockOffset(name, offset string) error {
	if d.consensus() {
		return d.cfg.Deployment().ClockError()
	}
	n, ok := d.set.Node(name)
	if !ok {
		return fmt.Errorf("no node named %q", name)
	}
	if err := d.topo.setClock(n, offset); err != nil {
		return err
	}
	d.update(name, func(x *Node) { x.ClockOff = normOffset(offset) })
	return nil
}
