package etcd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// FindEtcd finds the etcd server binary: $LOCKJEPSEN_ETCD_BIN, else etcd on
// PATH (Debian's etcd-server puts it in /usr/bin).
func FindEtcd() (string, error) {
	if b := os.Getenv("LOCKJEPSEN_ETCD_BIN"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("--topology etcd needs the etcd server, which is not on PATH: run 'make setup-etcd' (installs Debian's etcd-server) or set LOCKJEPSEN_ETCD_BIN")
	}
	return b, nil
}

var versionRE = regexp.MustCompile(`etcd Version: (\S+)`)

// Local runs the etcd members as processes on 127.0.0.1. On the docker
// runtime the same code asks the members in their containers (docker.go)
// and never starts a process.
type Local struct {
	cfg     cluster.Config
	bin     string
	version string
	peers   []string // peer URL of each member, in node order

	*cluster.NodeSet
	mu      sync.Mutex                  // guards procs and clients
	procs   map[string]*cluster.Proc    // the members' processes (local runtime)
	clients map[string]*clientv3.Client // one per member, its endpoint only
}

var _ cluster.Runtime = (*Local)(nil)

func newLocal(cfg cluster.Config) (*Local, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("cluster config: no run directory")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin, err := FindEtcd()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("%s --version: no version in %q", bin, out)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	cfg.Dir = dir
	ports, err := cluster.FreePorts(cfg.BasePort, 2*cfg.Members)
	if err != nil {
		return nil, err
	}
	e := newMembers(cfg, &cluster.NodeSet{})
	e.bin, e.version = bin, string(m[1])
	for i, n := range (deployment{}).Layout(cfg) {
		n.Dir = filepath.Join(dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i]))
		e.Add(n)
		e.peers = append(e.peers, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i+1])))
	}
	return e, nil
}

// newMembers is the member table and clients over set, no process yet.
func newMembers(cfg cluster.Config, set *cluster.NodeSet) *Local {
	return &Local{cfg: cfg, NodeSet: set, procs: map[string]*cluster.Proc{}, clients: map[string]*clientv3.Client{}}
}

func (e *Local) Version() string                     { return "etcd " + e.version }
func (e *Local) WatcherAddrs() []string              { return nil }
func (e *Local) Config() cluster.Config              { return e.cfg }
func (e *Local) Pause(name string) error             { return e.Signal(name, syscall.SIGSTOP, true) }
func (e *Local) Resume(name string) error            { return e.Signal(name, syscall.SIGCONT, false) }
func (e *Local) SetClockOffset(string, string) error { return ErrClock } // see ErrClock

// Command is a Valkey notion; etcd members answer the client API only.
func (e *Local) Command(context.Context, string, ...string) (string, error) {
	return "", fmt.Errorf("etcd members take no Valkey commands")
}

func (e *Local) initialCluster() string {
	nodes := e.Nodes()
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Name + "=" + e.peers[i]
	}
	return strings.Join(parts, ",")
}

// Up starts every member with a fresh data dir and waits until each answers
// and one leader is elected.
func (e *Local) Up(ctx context.Context) error {
	for _, n := range e.Nodes() {
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		if err := e.start(n.Name); err != nil {
			_ = e.Down()
			return err
		}
	}
	if err := e.WaitReady(ctx); err != nil {
		_ = e.Down()
		return err
	}
	return nil
}

// start runs one member; with an existing data dir etcd ignores the
// --initial-cluster flags and rejoins with what it has on disk.
func (e *Local) start(name string) error {
	n, err := e.MustNode(name)
	if err != nil {
		return err
	}
	peer := e.peers[e.Index(name)]
	client := "http://" + n.Addr
	args := []string{
		"--name", n.Name, "--data-dir", filepath.Join(n.Dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", e.initialCluster(), "--initial-cluster-state", "new",
		"--initial-cluster-token", "lockjepsen",
		"--heartbeat-interval", strconv.Itoa(int(Heartbeat.Milliseconds())),
		"--election-timeout", strconv.Itoa(int(ElectionTimeout.Milliseconds())),
		"--logger", "zap", "--log-outputs", "stderr",
	}
	p, err := cluster.Spawn{Bin: e.bin, Args: args, Log: n.LogFile, Detached: e.cfg.Detached}.Start()
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	e.mu.Lock()
	e.procs[name] = p
	e.mu.Unlock()
	e.Update(name, func(x *cluster.Node) { x.PID, x.Killed, x.Paused = p.PID(), false, false })
	return e.saveState()
}

// saveState writes cluster.json (the members and their pids), as every
// local runtime does.
func (e *Local) saveState() error { return cluster.SaveState(e.cfg, e.Version(), e.Nodes()) }

func (e *Local) client(name string) (*clientv3.Client, error) {
	n, err := e.MustNode(name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.clients[name]; c != nil {
		return c, nil
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{n.Addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	e.clients[name] = c
	return c, nil
}

// MemberStatus is one member's answer to Status.
type MemberStatus struct {
	Node     cluster.Node
	ID       uint64
	Leader   uint64 // the member it believes leads; 0 none
	Term     uint64
	IsLeader bool
}

// Status asks one member; a paused or killed member gives an error.
func (e *Local) Status(ctx context.Context, name string) (MemberStatus, error) {
	n, ok := e.Node(name)
	if !ok {
		return MemberStatus{}, fmt.Errorf("no member named %q", name)
	}
	if n.PID == 0 || n.Paused {
		return MemberStatus{}, fmt.Errorf("%s is down or paused", name)
	}
	c, err := e.client(name)
	if err != nil {
		return MemberStatus{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	s, err := c.Status(ctx, n.Addr)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("%s status: %w", name, err)
	}
	return MemberStatus{Node: n, ID: s.Header.MemberId, Leader: s.Leader, Term: s.RaftTerm,
		IsLeader: s.Leader != 0 && s.Leader == s.Header.MemberId}, nil
}

// leaderOnce asks every live member and returns the leader claimant with the
// highest term (a resumed old leader may still claim an older term).
func (e *Local) leaderOnce(ctx context.Context, except string) (cluster.Node, error) {
	var best *MemberStatus
	var errs []string
	for _, n := range e.Nodes() {
		s, err := e.Status(ctx, n.Name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if s.IsLeader && n.Name != except && (best == nil || s.Term > best.Term) {
			best = &s
		}
	}
	if best == nil {
		return cluster.Node{}, fmt.Errorf("no member leads (%s)", strings.Join(errs, "; "))
	}
	return best.Node, nil
}

// Primary is the Raft leader: the member whose Status names itself leader.
func (e *Local) Primary(ctx context.Context) (cluster.Node, error) {
	return e.pollLeader(ctx, "", 10*time.Second)
}

// WaitFailover waits until a member other than from leads.
func (e *Local) WaitFailover(ctx context.Context, from string) (cluster.Node, error) {
	return e.pollLeader(ctx, from, cluster.ReadyTimeout)
}

func (e *Local) pollLeader(ctx context.Context, except string, limit time.Duration) (cluster.Node, error) {
	return cluster.PollUntil(ctx, limit, "no etcd leader", func(ctx context.Context) (cluster.Node, error) { return e.leaderOnce(ctx, except) })
}

// WaitReady: every live, unpaused member answers and all name one leader.
func (e *Local) WaitReady(ctx context.Context) error {
	_, err := cluster.PollUntil(ctx, cluster.ReadyTimeout, "etcd cluster not ready (see the logs under "+e.cfg.Dir+")",
		func(ctx context.Context) (cluster.Node, error) { return cluster.Node{}, e.readyOnce(ctx) })
	return err
}

func (e *Local) readyOnce(ctx context.Context) error {
	leaders := map[uint64]bool{}
	for _, n := range e.Nodes() {
		if n.Paused || n.PID == 0 {
			continue
		}
		s, err := e.Status(ctx, n.Name)
		if err != nil {
			return err
		}
		if s.Leader == 0 {
			return fmt.Errorf("%s knows no leader", n.Name)
		}
		leaders[s.Leader] = true
	}
	if len(leaders) != 1 {
		return fmt.Errorf("members name %d leaders", len(leaders))
	}
	return nil
}

// SetPID records a member's process and saves the state file.
func (e *Local) SetPID(name string, pid int, killed bool) {
	e.NodeSet.SetPID(name, pid, killed)
	_ = e.saveState()
}

// Kill sends SIGKILL and waits until the member is gone.
func (e *Local) Kill(name string) error { return cluster.KillMember(e, name) }

// Stop sends SIGTERM (SIGCONT first) and waits.
func (e *Local) Stop(name string) error { return cluster.StopMember(e, name) }

// Restart starts a member again with its data dir: it rejoins as a follower
// and catches up from the leader. The mode is a Valkey notion and ignored.
func (e *Local) Restart(ctx context.Context, name string, _ cluster.RestartMode) error {
	return cluster.RestartMember(ctx, e, name, e.start, e.awaitAnswer)
}

// awaitAnswer waits until a (re)started member answers Status.
func (e *Local) awaitAnswer(ctx context.Context, name string) error {
	n, err := e.MustNode(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if _, err := e.Status(ctx, name); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer within 10s of its restart; see %s", name, n.LogFile)
		case <-time.After(cluster.PollEvery):
		}
	}
}

// closeClients closes the admin clients (one per member).
func (e *Local) closeClients() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clients {
		_ = c.Close()
	}
	e.clients = map[string]*clientv3.Client{}
}

// Down SIGKILLs every member and closes the admin clients.
func (e *Local) Down() error {
	e.closeClients()
	return cluster.DownAll(e)
}

// CollectLogs copies every member's log into dst as <name>.log.
func (e *Local) CollectLogs(dst string) error { return cluster.CollectMemberLogs(e.Nodes(), dst) }
