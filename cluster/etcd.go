package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TopologyEtcd is a Raft cluster of etcd members (Debian's etcd-server) as
// processes on loopback, or in containers on the docker runtime
// (etcd_docker.go): no Valkey at all. The lock is the official client's
// concurrency.Mutex (recipe etcd-mutex).
const TopologyEtcd = "etcd"

// RoleMember is an etcd member; which one leads is asked at run time.
const RoleMember Role = "member"

// DefaultEtcdMembers is the usual three.
const DefaultEtcdMembers = 3

// Raft timing of every member: short, for failovers that fit a short run.
// etcd's rule is election timeout >= 5 x heartbeat; its minimum lease TTL
// follows from them: ceil(1.5 x election timeout) = 2 s.
const (
	EtcdHeartbeat       = 100 * time.Millisecond
	EtcdElectionTimeout = 1000 * time.Millisecond
)

// ErrEtcdClock is why a member's clock cannot be moved: etcd is a Go binary,
// and Go reads CLOCK_REALTIME and CLOCK_MONOTONIC through the vDSO, never
// through libc's clock_gettime, so libfaketime (an LD_PRELOAD of libc's time
// functions) has nothing to intercept. Verified: etcd 3.4.23 under
// libfaketime with an offset of +1 day logs true time (TestEtcdIgnoresFaketime).
// Its leases and elections run on monotonic time anyway (lease expiry is a
// time.Time with a monotonic reading, Raft counts ticks of a ticker).
var ErrEtcdClock = errors.New("an etcd member's clock cannot be moved: etcd is a Go program, which reads the clock through the vDSO, not libc, so libfaketime's LD_PRELOAD does not reach it (verified: etcd under libfaketime +1d logs true time); its leases use monotonic time in any case")

func init() { Register(2, etcdDeployment{}) }

// etcdDeployment has its own runtimes (EtcdLocal, and Docker's etcd layout).
type etcdDeployment struct{ consensusDeployment }

func (etcdDeployment) Name() string { return TopologyEtcd }
func (etcdDeployment) Doc() string {
	return "--members etcd members (Raft), the lock is the official client's concurrency.Mutex"
}
func (etcdDeployment) Banner(c Config, version string) string {
	return fmt.Sprintf("cluster: etcd, %d members (Raft, heartbeat %v, election timeout %v; %s)",
		c.Members, EtcdHeartbeat, EtcdElectionTimeout, version)
}
func (etcdDeployment) Settled() string {
	return "waiting for every etcd member to answer and one leader"
}

func (etcdDeployment) Endpoints(rt Runtime) Endpoints {
	return Endpoints{Etcd: EtcdEndpoints(rt)}
}

func (etcdDeployment) ClockError() error      { return ErrEtcdClock }
func (etcdDeployment) layoutDocker(d *Docker) { d.layoutEtcd() }
func (etcdDeployment) Offers(need string) bool {
	return need == TopologyEtcd || need == NeedAny
}
func (etcdDeployment) ValidateRun(k RunKnobs) error {
	return refuseValkeyRunKnobs(k, "etcd commits every write through Raft before it answers", "etcd fsyncs its WAL before it answers")
}
func (etcdDeployment) Validate(c *Config) error { return c.validateMembers("etcd", ErrEtcdClock) }
func (etcdDeployment) Layout(c Config) []Node   { return memberLayout("etcd", c.Members) }
func (etcdDeployment) NewLocal(c Config, _ Binaries) (Runtime, error) {
	e, err := newEtcdLocal(c)
	if err != nil {
		return nil, err
	}
	return e, nil
}

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

var etcdVersionRE = regexp.MustCompile(`etcd Version: (\S+)`)

// EtcdLocal runs the etcd members as processes on 127.0.0.1.
type EtcdLocal struct {
	cfg     Config
	bin     string
	version string
	peers   []string // peer URL of each member, in node order

	nodeSet
	procs   map[string]*Proc
	clients map[string]*clientv3.Client // one per member, its endpoint only
}

var _ Runtime = (*EtcdLocal)(nil)

func newEtcdLocal(cfg Config) (*EtcdLocal, error) {
	if err := cfg.validateWithDir(); err != nil {
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
	m := etcdVersionRE.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("%s --version: no version in %q", bin, out)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	cfg.Dir = dir
	ports, err := allocatePorts(cfg.BasePort, 2*cfg.Members)
	if err != nil {
		return nil, err
	}
	e := &EtcdLocal{cfg: cfg, bin: bin, version: string(m[1]), procs: map[string]*Proc{}, clients: map[string]*clientv3.Client{}}
	for i, n := range (etcdDeployment{}).Layout(cfg) {
		n.Dir = filepath.Join(dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i]))
		e.nodes = append(e.nodes, n)
		e.peers = append(e.peers, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i+1])))
	}
	return e, nil
}

// EtcdEndpoints lists the members' client addresses (host:port): etcd's,
// or a ZooKeeper ensemble's.
func EtcdEndpoints(rt Runtime) []string {
	var out []string
	for _, n := range rt.Nodes() {
		if n.Kind == RoleMember {
			out = append(out, n.Addr)
		}
	}
	return out
}

func (e *EtcdLocal) Version() string          { return "etcd " + e.version }
func (e *EtcdLocal) SentinelAddrs() []string  { return nil }
func (e *EtcdLocal) Config() Config           { return e.cfg }
func (e *EtcdLocal) Pause(name string) error  { return e.signal(name, syscall.SIGSTOP, true) }
func (e *EtcdLocal) Resume(name string) error { return e.signal(name, syscall.SIGCONT, false) }

// SetClockOffset refuses: see ErrEtcdClock.
func (e *EtcdLocal) SetClockOffset(string, string) error { return ErrEtcdClock }

// Command is a Valkey notion; etcd members answer the client API only.
func (e *EtcdLocal) Command(context.Context, string, ...string) (string, error) {
	return "", fmt.Errorf("etcd members take no Valkey commands")
}

func (e *EtcdLocal) initialCluster() string {
	parts := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		parts[i] = n.Name + "=" + e.peers[i]
	}
	return strings.Join(parts, ",")
}

// Up starts every member with a fresh data dir and waits until each answers
// and one leader is elected.
func (e *EtcdLocal) Up(ctx context.Context) error {
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
func (e *EtcdLocal) start(name string) error {
	e.mu.Lock()
	i := e.index(name)
	n := e.nodes[i]
	peer := e.peers[i]
	e.mu.Unlock()
	client := "http://" + n.Addr
	args := []string{
		"--name", n.Name, "--data-dir", filepath.Join(n.Dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", e.initialCluster(), "--initial-cluster-state", "new",
		"--initial-cluster-token", "lockjepsen",
		"--heartbeat-interval", strconv.Itoa(int(EtcdHeartbeat.Milliseconds())),
		"--election-timeout", strconv.Itoa(int(EtcdElectionTimeout.Milliseconds())),
		"--logger", "zap", "--log-outputs", "stderr",
	}
	p, err := spawn(e.bin, args, nil, n.LogFile, e.cfg.Detached)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	e.mu.Lock()
	e.procs[name] = p
	e.nodes[i].PID, e.nodes[i].Killed, e.nodes[i].Paused = p.PID(), false, false
	e.mu.Unlock()
	return e.saveState()
}

// saveState writes cluster.json (the members and their pids), as Local does.
func (e *EtcdLocal) saveState() error { return saveMembers(e.cfg, e.Version(), e.Nodes()) }

func (e *EtcdLocal) client(name string) (*clientv3.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.clients[name]; c != nil {
		return c, nil
	}
	n := e.nodes[e.index(name)]
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{n.Addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	e.clients[name] = c
	return c, nil
}

// MemberStatus is one member's answer to Status.
type MemberStatus struct {
	Node     Node
	ID       uint64
	Leader   uint64 // the member it believes leads; 0 none
	Term     uint64
	IsLeader bool
}

// Status asks one member; a paused or killed member gives an error.
func (e *EtcdLocal) Status(ctx context.Context, name string) (MemberStatus, error) {
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
func (e *EtcdLocal) leaderOnce(ctx context.Context, except string) (Node, error) {
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
		return Node{}, fmt.Errorf("no member leads (%s)", strings.Join(errs, "; "))
	}
	return best.Node, nil
}

// Primary is the Raft leader: the member whose Status names itself leader.
func (e *EtcdLocal) Primary(ctx context.Context) (Node, error) {
	return e.pollLeader(ctx, "", 10*time.Second)
}

// WaitFailover waits until a member other than from leads.
func (e *EtcdLocal) WaitFailover(ctx context.Context, from string) (Node, error) {
	return e.pollLeader(ctx, from, readyTimeout)
}

func (e *EtcdLocal) pollLeader(ctx context.Context, except string, limit time.Duration) (Node, error) {
	return pollUntil(ctx, limit, "no etcd leader", func(ctx context.Context) (Node, error) { return e.leaderOnce(ctx, except) })
}

// WaitReady: every live, unpaused member answers and all name one leader.
func (e *EtcdLocal) WaitReady(ctx context.Context) error {
	_, err := pollUntil(ctx, readyTimeout, "etcd cluster not ready (see the logs under "+e.cfg.Dir+")",
		func(ctx context.Context) (Node, error) { return Node{}, e.readyOnce(ctx) })
	return err
}

func (e *EtcdLocal) readyOnce(ctx context.Context) error {
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

func (e *EtcdLocal) setPID(name string, pid int, killed bool) {
	e.nodeSet.setPID(name, pid, killed)
	_ = e.saveState()
}

// Kill sends SIGKILL and waits until the member is gone.
func (e *EtcdLocal) Kill(name string) error { return killMember(e, name) }

// Stop sends SIGTERM (SIGCONT first) and waits.
func (e *EtcdLocal) Stop(name string) error { return stopMember(e, name) }

// Restart starts a member again with its data dir: it rejoins as a follower
// and catches up from the leader. The mode is a Valkey notion and ignored.
func (e *EtcdLocal) Restart(ctx context.Context, name string, _ RestartMode) error {
	n, err := e.mustNode(name)
	if err != nil {
		return err
	}
	if n.PID != 0 {
		if err := e.Kill(name); err != nil {
			return err
		}
	}
	if err := e.start(name); err != nil {
		return err
	}
	return e.awaitAnswer(ctx, name)
}

// awaitAnswer waits until a (re)started member answers Status.
func (e *EtcdLocal) awaitAnswer(ctx context.Context, name string) error {
	n, err := e.mustNode(name)
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
		case <-time.After(pollEvery):
		}
	}
}

// closeClients closes the admin clients (one per member).
func (e *EtcdLocal) closeClients() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clients {
		_ = c.Close()
	}
	e.clients = map[string]*clientv3.Client{}
}

// Down SIGKILLs every member and closes the admin clients.
func (e *EtcdLocal) Down() error {
	e.closeClients()
	return downAll(e)
}

// CollectLogs copies every member's log into dst as <name>.log.
func (e *EtcdLocal) CollectLogs(dst string) error { return collectMemberLogs(e.Nodes(), dst) }

// ClientTestLayout: the run's three members, whose leader the leader case
// kills.
func (etcdDeployment) ClientTestLayout(*Config) {}

// ClientTestHooks add the leader case: the leader killed mid-grant, and
// restarted when the case ends.
func (etcdDeployment) ClientTestHooks(ctx context.Context, rt Runtime, ep Endpoints) ClientTestHooks {
	return ClientTestHooks{
		Against: fmt.Sprintf("%s (%d members)", rt.Version(), len(ep.Etcd)),
		ChangeLeader: func() (func() error, string, error) {
			l, err := rt.Primary(ctx)
			if err != nil {
				return nil, "", fmt.Errorf("the leader: %w", err)
			}
			if err := rt.Kill(l.Name); err != nil {
				return nil, "", err
			}
			return func() error {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				return rt.Restart(rctx, l.Name, AsReplica)
			}, l.Name, nil
		},
	}
}
