package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// What the consensus deployments' local runtimes (etcd's EtcdLocal,
// ZooKeeper's ZKLocal) share: members as processes on loopback, killed,
// stopped and collected the same way, a leader polled for by asking each.

// consensusDeployment holds what the consensus deployments share: their own
// runtimes, so the *Local hooks of a Valkey deployment are never called; no
// replication to wait for (every live member serving and one leader,
// WaitReady, is the whole wait between faults); lock keys that live exactly
// as long as their lease or session, with no PTTL to audit.
type consensusDeployment struct{}

var errOwnRuntime = errors.New("a consensus topology runs on its own runtime, not on Valkey processes")

func (consensusDeployment) Note(Config, bool) string            { return "" }
func (consensusDeployment) Replicated() bool                    { return false }
func (consensusDeployment) Expires() bool                       { return false }
func (consensusDeployment) meshed() bool                        { return true }
func (consensusDeployment) rejoinsAsReplica() bool              { return false }
func (consensusDeployment) Defaults(*Config, func(string) bool) {}
func (consensusDeployment) up(context.Context, *Local) error    { return errOwnRuntime }
func (consensusDeployment) readyOnce(context.Context, *Local) error {
	return errOwnRuntime
}
func (consensusDeployment) primary(context.Context, *Local) (Node, error) {
	return Node{}, errOwnRuntime
}
func (consensusDeployment) waitFailover(context.Context, *Local, string) (Node, error) {
	return Node{}, errOwnRuntime
}

// refuseValkeyRunKnobs refuses the run knobs that count Valkey replicas or
// fsyncs, saying why the service needs neither.
func refuseValkeyRunKnobs(k RunKnobs, commits, fsyncs string) error {
	switch {
	case k.Wait:
		return fmt.Errorf("--wait counts Valkey replicas: %s", commits)
	case k.WaitAOF:
		return fmt.Errorf("--waitaof is a Valkey knob: %s", fsyncs)
	case k.DelayedRestart > 0:
		return fmt.Errorf("--delayed-restart is a redlock-topology knob: add --topology redlock")
	}
	return nil
}

// validateMembers checks --members (3 when unset) and refuses the clock
// fault and the Valkey knobs.
func (c *Config) validateMembers(product string, clock error) error {
	if c.Members == 0 {
		c.Members = 3
	}
	switch {
	case c.Members < 1 || c.Members > 7:
		return fmt.Errorf("--members %d: want 1 to 7 %s members (3 is the usual)", c.Members, product)
	case c.FakeTime:
		return clock
	case c.MinReplicasToWrite > 0 || c.AppendOnly || c.Build != "" || c.OldReplica || c.MaxMemory > 0:
		return fmt.Errorf("--min-replicas, --appendonly, --maxmemory, --valkey-build and --mixed-versions are Valkey knobs: the %s topology runs no Valkey", product)
	}
	return nil
}

// memberLayout names the members prefix-0, prefix-1, ...
func memberLayout(prefix string, members int) []Node {
	var nodes []Node
	for i := 0; i < members; i++ {
		nodes = append(nodes, Node{Name: fmt.Sprintf("%s-%d", prefix, i), Kind: RoleMember})
	}
	return nodes
}

// memberProcs is such a runtime's node table.
type memberProcs interface {
	Nodes() []Node
	mustNode(name string) (Node, error)
	setPID(name string, pid int, killed bool)
}

// killMember sends SIGKILL and waits until the member is gone.
func killMember(m memberProcs, name string) error {
	n, err := m.mustNode(name)
	if err != nil {
		return err
	}
	if err := killProc(n); err != nil {
		return err
	}
	m.setPID(name, 0, true)
	return nil
}

// stopMember sends SIGTERM (SIGCONT first) and waits.
func stopMember(m memberProcs, name string) error {
	n, err := m.mustNode(name)
	if err != nil || n.PID == 0 {
		return err
	}
	if err := stopProc(n); err != nil {
		return err
	}
	m.setPID(name, 0, true)
	return nil
}

// downAll SIGKILLs every node still running and waits until each is gone.
func downAll(m interface {
	Nodes() []Node
	setPID(name string, pid int, killed bool)
}) error {
	for _, n := range m.Nodes() {
		if n.PID == 0 {
			continue
		}
		_ = signalPID(n.PID, syscall.SIGKILL)
		if !waitGone(n.PID, 5*time.Second) {
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", n.Name, n.PID)
		}
		m.setPID(n.Name, 0, true)
	}
	return nil
}

// collectMemberLogs copies every member's log into dst as <name>.log.
func collectMemberLogs(nodes []Node, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	for _, n := range nodes {
		if err := CopyFile(n.LogFile, filepath.Join(dst, n.Name+".log")); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// saveMembers writes cluster.json (the members and their pids), as Local does.
// SaveState writes the cluster's state file (StateFile in cfg.Dir) for a
// runtime outside this package: its nodes and their PIDs, which `cluster
// down` and the tests that check no process outlived a run read.
func SaveState(cfg Config, version string, nodes []Node) error {
	return saveMembers(cfg, version, nodes)
}

func saveMembers(cfg Config, version string, nodes []Node) error {
	b, err := json.MarshalIndent(state{Config: cfg, Version: version, Nodes: nodes}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode cluster state: %w", err)
	}
	return writeFile(filepath.Join(cfg.Dir, StateFile), string(b)+"\n")
}

// pollUntil asks once every pollEvery until ask succeeds, for at most
// limit; the error says what was waited for and the last answer.
func pollUntil(ctx context.Context, limit time.Duration, what string, ask func(context.Context) (Node, error)) (Node, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		n, err := ask(ctx)
		if err == nil {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return Node{}, fmt.Errorf("%s within %v: %w", what, limit, err)
		case <-time.After(pollEvery):
		}
	}
}
