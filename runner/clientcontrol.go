package runner

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
)

// The channel from the nemesis to the client processes: the client faults
// (nemesis.ClientEnv) reach client i through the control its
// workload.Client offers.

// The client controls of the client-side faults (workload.Client has
// them all).
type (
	unreachabler interface{ SetUnreachable(addrs []string) error }
	crasher      interface{ ArmCrash() error }
	starver      interface{ StarveRenewals(d time.Duration) error }
	replyArmer   interface{ ArmReply(op, mode string) error }
	connDropper  interface{ DropConns() error }
)

var _ nemesis.ClientEnv = env{}

func (e env) NumClients() int { return len(e.r.clients) }

// control is client i as the control T, or an error that client i
// "cannot" do it.
func control[T any](e env, i int, cannot string) (T, error) {
	var zero T
	c, err := e.client(i)
	if err != nil {
		return zero, err
	}
	t, ok := c.(T)
	if !ok {
		return zero, fmt.Errorf("client %d %s", i, cannot)
	}
	return t, nil
}

func (e env) SetUnreachable(i int, addrs []string) error {
	u, err := control[unreachabler](e, i, "cannot be told which nodes it reaches")
	if err != nil {
		return err
	}
	return u.SetUnreachable(addrs)
}

func (e env) ArmCrash(i int) error {
	a, err := control[crasher](e, i, "cannot be armed to crash")
	if err != nil {
		return err
	}
	e.r.markKilled(i)
	return a.ArmCrash()
}

func (e env) StarveRenewals(i int, d time.Duration) error {
	s, err := control[starver](e, i, "cannot have its watchdog starved")
	if err != nil {
		return err
	}
	return s.StarveRenewals(d)
}

func (e env) ArmReply(i int, op, mode string) error {
	a, err := control[replyArmer](e, i, "cannot have its replies reached")
	if err != nil {
		return err
	}
	return a.ArmReply(op, mode)
}

func (e env) DropConns(i int) error {
	d, err := control[connDropper](e, i, "cannot have its connections dropped")
	if err != nil {
		return err
	}
	return d.DropConns()
}

func (e env) KillClient(i int) error {
	c, err := e.client(i)
	if err != nil {
		return err
	}
	e.r.markKilled(i)
	return signalKill(c)
}

func (e env) ClientAlive(i int) bool {
	c, err := e.client(i)
	if err != nil {
		return false
	}
	return processAlive(c.PID())
}

func (e env) DelayedRestart() time.Duration { return e.r.cfg.DelayedRestart }

func signalKill(c clientHandle) error {
	if exited(c) {
		return fmt.Errorf("SIGKILL client pid %d: it has exited", c.PID())
	}
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL client pid %d: %w", c.PID(), err)
	}
	return nil
}

// processAlive: the pid exists and is not a zombie waiting to be reaped.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
