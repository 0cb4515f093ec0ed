package cluster

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/knob"
)

// What the consensus deployments (each in its folder under
// deployments/) share from the runtimes: members as processes on loopback,
// killed, stopped and collected the same way, a leader polled for by asking
// each. The Docker runtime runs them in containers through DockerService.

// DefaultMembers is the usual three members of a consensus service.
const DefaultMembers = 3

// RoleMember is a consensus service's member; which one leads is asked at
// run time.
const RoleMember Role = "member"

// ConsensusDeployment holds what the consensus deployments share, embedded
// in each: no replication to wait for (every live member serving and one
// leader, WaitReady, is the whole wait between faults); lock keys that live
// exactly as long as their lease or session, with no PTTL to audit.
type ConsensusDeployment struct{}

func (ConsensusDeployment) Note(Config, bool) string            { return "" }
func (ConsensusDeployment) Replicated() bool                    { return false }
func (ConsensusDeployment) Expires() bool                       { return false }
func (ConsensusDeployment) Defaults(*Config, func(string) bool) {}

// RefuseValkeyRunKnobs refuses the run knobs that count Valkey replicas or
// fsyncs, saying why the service needs neither.
func RefuseValkeyRunKnobs(k RunKnobs, commits, fsyncs string) error {
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

// MembersFlag registers --members for a deployment laid out by
// MemberLayout (its Flags, FlagOwner); ValidateMembers checks it.
func MembersFlag(fs *flag.FlagSet, c *Config) {
	if c.Members == 0 {
		c.Members = DefaultMembers
	}
	fs.Var(knob.Int{N: &c.Members, Min: 1, Max: 7}, "members", "members of the consensus service (3 is the usual)")
}

// ValidateMembers checks --members (3 when unset) and refuses the clock
// fault and the Valkey knobs.
func (c *Config) ValidateMembers(product string, clock error) error {
	if c.Members == 0 {
		c.Members = DefaultMembers
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

// MemberLayout names the members prefix-0, prefix-1, ...
func MemberLayout(prefix string, members int) []Node {
	var nodes []Node
	for i := 0; i < members; i++ {
		nodes = append(nodes, Node{Name: fmt.Sprintf("%s-%d", prefix, i), Kind: RoleMember})
	}
	return nodes
}

// MemberAddrs lists the members' client addresses (host:port) in layout
// order: what a consensus deployment's Endpoints hands the clients.
func MemberAddrs(rt Runtime) []string {
	var out []string
	for _, n := range rt.Nodes() {
		if n.Kind == RoleMember {
			out = append(out, n.Addr)
		}
	}
	return out
}

// MemberProcs is a member runtime's node table (its NodeSet, with SetPID
// saving the state file).
type MemberProcs interface {
	Nodes() []Node
	MustNode(name string) (Node, error)
	SetPID(name string, pid int, killed bool)
}

// KillMember sends SIGKILL and waits until the member is gone.
func KillMember(m MemberProcs, name string) error {
	n, err := m.MustNode(name)
	if err != nil {
		return err
	}
	if err := killProc(n); err != nil {
		return err
	}
	m.SetPID(name, 0, true)
	return nil
}

// StopMember sends SIGTERM (SIGCONT first) and waits.
func StopMember(m MemberProcs, name string) error {
	n, err := m.MustNode(name)
	if err != nil || n.PID == 0 {
		return err
	}
	if err := stopProc(n); err != nil {
		return err
	}
	m.SetPID(name, 0, true)
	return nil
}

// RestartMember starts a member again with its data dir, SIGKILLing it
// first if it runs, and waits until it answers (await): it rejoins as a
// follower and catches up from the leader.
func RestartMember(ctx context.Context, m MemberProcs, name string, start func(string) error, await func(context.Context, string) error) error {
	n, err := m.MustNode(name)
	if err != nil {
		return err
	}
	if n.PID != 0 {
		if err := KillMember(m, name); err != nil {
			return err
		}
	}
	if err := start(name); err != nil {
		return err
	}
	return await(ctx, name)
}

// DownAll SIGKILLs every node still running and waits until each is gone.
func DownAll(m interface {
	Nodes() []Node
	SetPID(name string, pid int, killed bool)
}) error {
	for _, n := range m.Nodes() {
		if n.PID == 0 {
			continue
		}
		_ = signalPID(n.PID, syscall.SIGKILL)
		if !WaitGone(n.PID, 5*time.Second) {
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", n.Name, n.PID)
		}
		m.SetPID(n.Name, 0, true)
	}
	return nil
}

// CollectMemberLogs copies every member's log into dst as <name>.log.
func CollectMemberLogs(nodes []Node, dst string) error {
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

// SaveState writes the cluster's state file (StateFile in cfg.Dir) for a
// runtime outside this package: its nodes and their PIDs, which `cluster
// down` and the tests that check no process outlived a run read.
func SaveState(cfg Config, version string, nodes []Node) error {
	b, err := json.MarshalIndent(state{Config: cfg, Version: version, Nodes: nodes}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode cluster state: %w", err)
	}
	return writeFile(filepath.Join(cfg.Dir, StateFile), string(b)+"\n")
}

// PollUntil asks once every PollEvery until ask succeeds, for at most
// limit; the error says what was waited for and the last answer.
func PollUntil(ctx context.Context, limit time.Duration, what string, ask func(context.Context) (Node, error)) (Node, error) {
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
		case <-time.After(PollEvery):
		}
	}
}
