package runner

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// fromScenarioDeployment applies a scenario's topology, recipe and fence,
// and the deployment's defaults for what the scenario leaves unset.
func fromScenarioDeployment(c *Config, s scenario.Scenario) {
	if s.Topology != "" {
		c.Cluster.Topology = s.Topology
	}
	if s.Recipe != "" {
		c.Recipe = s.Recipe
	}
	if s.Fence != "" {
		c.Fence = s.Fence
	}
	if d, err := cluster.Lookup(c.Cluster.Topology); err == nil {
		d.Defaults(&c.Cluster, func(string) bool { return false })
	}
}

// validateTopology refuses the knobs and recipes that mean nothing on the
// run's deployment, in one line naming the knob.
func (c *Config) validateTopology() error {
	d, err := cluster.Lookup(c.Cluster.Topology)
	if err != nil {
		return err
	}
	var all []lock.Offerer
	for _, name := range cluster.Topologies {
		o, _ := cluster.Lookup(name)
		all = append(all, o)
	}
	if err := lock.RunsOn(c.Recipe, d, all); err != nil {
		return err
	}
	if !(c.DriftFactor >= 0 && c.DriftFactor < 0.5) { // NaN fails both comparisons
		return fmt.Errorf("--drift-factor %v: want 0 to below 0.5 (the distlock page uses 0.01)", c.DriftFactor)
	}
	if c.DelayedRestart < 0 {
		return fmt.Errorf("--delayed-restart %v: want 0 or more", c.DelayedRestart)
	}
	return d.ValidateRun(cluster.RunKnobs{Wait: c.Wait.On(), WaitAOF: c.WaitAOF.On(),
		Fence: c.Fence, FenceSource: c.FenceSource, DelayedRestart: c.DelayedRestart})
}

// unreachabler and crasher are the client controls of the redlock and
// stuck-lock faults (workload.Client has both).
type unreachabler interface{ SetUnreachable(addrs []string) error }
type crasher interface{ ArmCrash() error }

var _ nemesis.ClientEnv = env{}

func (e env) NumClients() int { return len(e.r.clients) }

func (e env) SetUnreachable(i int, addrs []string) error {
	c, err := e.client(i)
	if err != nil {
		return err
	}
	u, ok := c.(unreachabler)
	if !ok {
		return fmt.Errorf("client %d cannot be told which nodes it reaches", i)
	}
	return u.SetUnreachable(addrs)
}

func (e env) ArmCrash(i int) error {
	c, err := e.client(i)
	if err != nil {
		return err
	}
	a, ok := c.(crasher)
	if !ok {
		return fmt.Errorf("client %d cannot be armed to crash", i)
	}
	e.r.markKilled(i)
	return a.ArmCrash()
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

// auditPTTL asks every data node for the PTTL of every lock key once the
// clients have stopped, and records each answer as an "audit-pttl" event
// (process nemesis; key; value = the PTTL in ms, -1 no expiry, -2 no key). A
// -1 on a lock key is a lock nobody can ever take again: the checker's
// liveness verdict reads these events.
func (r *run) auditPTTL(keys []string) {
	if !r.cfg.Cluster.Deployment().Expires() {
		return // no PTTL on etcd: a lock key lives exactly as long as its lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range r.cluster.Nodes() {
		if n.Kind == cluster.RoleSentinel || n.PID == 0 || n.Paused {
			continue
		}
		for _, k := range keys {
			out, err := r.cluster.Command(ctx, n.Name, "PTTL", k)
			if err != nil && strings.Contains(err.Error(), "MOVED ") {
				continue // Valkey Cluster: this node does not serve the key's slot
			}
			ev := history.Event{Process: history.Nemesis, Type: history.Info, Time: truetime.Now(),
				F: history.NAuditPTTL, Node: n.Name, Key: k}
			if v, perr := strconv.ParseInt(out, 10, 64); err == nil && perr == nil {
				ev.Value = history.Int64(v)
				ev.Detail = fmt.Sprintf("PTTL %s on %s: %d", k, n.Name, v)
			} else {
				ev.Detail = fmt.Sprintf("PTTL %s on %s: no answer (%v)", k, n.Name, err)
			}
			r.record(ev)
		}
	}
}

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
