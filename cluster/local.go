package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sync"
	"syscall"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Local runs every node as a process on 127.0.0.1.
type Local struct {
	cfg  Config
	bins Binaries

	NodeSet // valkey-0..N then sentinel-0..M
	procs   map[string]*Proc
	adm     *admin
	// proxies are the --net-proxy proxies in front of the data nodes, nil
	// without the flag (netproxy.go).
	proxies *netProxies
	// initialPrimary is the address Sentinels were told to monitor.
	initialPrimary string
	// cache is the cache instance (CacheHost), once a fault started it;
	// outside the node set, so nothing that walks the deployment sees it.
	cache *Node
}

var _ Runtime = (*Local)(nil)

// NewLocal validates cfg and lays out the deployment's nodes; nothing starts
// until Up.
func NewLocal(cfg Config, bins Binaries) (*Local, error) {
	if err := cfg.validateWithDir(); err != nil {
		return nil, err
	}
	if err := bins.Check(cfg); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	cfg.Dir = dir
	nodes := cfg.Deployment().Layout(cfg)
	ports, err := allocateNodePorts(cfg, len(nodes))
	if err != nil {
		return nil, err
	}
	l := &Local{cfg: cfg, bins: bins, procs: map[string]*Proc{}, adm: newAdmin()}
	for i, n := range nodes {
		n.Dir = filepath.Join(dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		l.nodes = append(l.nodes, n)
	}
	// The address Sentinels are told to monitor and replicas first follow.
	l.initialPrimary = l.nodes[0].Addr
	return l, nil
}

// newLocal is NewLocal as a Runtime: returning NewLocal's result directly
// would wrap a nil *Local in a non-nil Runtime on error, which callers' nil
// checks then miss.
func newLocal(cfg Config, bins Binaries) (Runtime, error) {
	l, err := NewLocal(cfg, bins)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// allocateNodePorts picks the nodes' ports; a Valkey Cluster node's bus port
// (+10000) must be free too.
func allocateNodePorts(cfg Config, n int) ([]int, error) {
	if cfg.valkey().BusPorts() {
		return allocateClusterPorts(cfg.BasePort, n)
	}
	return allocatePorts(cfg.BasePort, n)
}

// LayoutValkey lists primaries valkey-0..p-1 then replicas valkey-p..p+r-1.
func LayoutValkey(_ Config, primaries, replicas int) []Node {
	var nodes []Node
	for i := 0; i < primaries+replicas; i++ {
		kind := RolePrimary
		if i >= primaries {
			kind = RoleReplica
		}
		nodes = append(nodes, Node{Name: fmt.Sprintf("valkey-%d", i), Kind: kind})
	}
	return nodes
}

// portClaimFor is how long a port handed out stays another run's. A port
// is free from the moment allocatePorts closes its listener until the node
// binds it, seconds later for a Sentinel or for a killed node that restarts;
// meanwhile the kernel may offer the same free port to another process's
// allocatePorts, and the later of the two nodes fails to bind. Runs side by
// side (a sweep's --parallel, the test suite) made that real: a Sentinel
// that never came up is a readiness timeout, not a lesson.
const portClaimFor = 10 * time.Minute

// portClaimDir is the folder of claims every lockjepsen process on the
// machine shares: an empty file per port, its modification time the claim's.
func portClaimDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("lockjepsen-ports-%d", os.Getuid()))
}

// claimPort claims port p for portClaimFor unless another claim on it is
// younger than that. It is called while p's listener is open, so no other
// process can be offered p by the kernel at the same moment. A folder that
// cannot be written claims nothing and refuses nothing: the race is back, the
// run is not stopped for it.
func claimPort(dir string, p int, now time.Time) bool {
	f := filepath.Join(dir, strconv.Itoa(p))
	if st, err := os.Stat(f); err == nil && now.Sub(st.ModTime()) < portClaimFor {
		return false
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return true
	}
	if err := os.WriteFile(f, nil, 0o644); err == nil {
		_ = os.Chtimes(f, now, now)
	}
	return true
}

// Config returns the validated config.
func (l *Local) Config() Config { return l.cfg }

// Version is the Valkey version in use.
func (l *Local) Version() string { return l.bins.Version }

// NodeSet is the guarded node list every local runtime keeps; mu also
// guards the runtime's own process table.
type NodeSet struct {
	mu    sync.Mutex
	nodes []Node
}

// Nodes returns a snapshot of every node.
func (s *NodeSet) Nodes() []Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Node(nil), s.nodes...)
}

// Node returns one node by name.
func (s *NodeSet) Node(name string) (Node, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(name); i >= 0 {
		return s.nodes[i], true
	}
	return Node{}, false
}

// signalNode sends SIGSTOP or SIGCONT to a node's process and records
// whether it is now paused.
func (s *NodeSet) signalNode(n Node, sig syscall.Signal, paused bool) error {
	if n.PID == 0 {
		return fmt.Errorf("%s is down", n.Name)
	}
	if err := signalPID(n.PID, sig); err != nil {
		return err
	}
	s.mu.Lock()
	if i := s.index(n.Name); i >= 0 {
		s.nodes[i].Paused = paused
	}
	s.mu.Unlock()
	return nil
}

func (s *NodeSet) MustNode(name string) (Node, error) {
	n, ok := s.Node(name)
	if !ok {
		return n, fmt.Errorf("no node named %q", name)
	}
	return n, nil
}

// signal sends SIGSTOP or SIGCONT to a node by name (signalNode).
func (s *NodeSet) Signal(name string, sig syscall.Signal, paused bool) error {
	n, err := s.MustNode(name)
	if err != nil {
		return err
	}
	return s.signalNode(n, sig, paused)
}

// Add appends a node to the set (a runtime laying out its nodes).
func (s *NodeSet) Add(n Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = append(s.nodes, n)
}

// Index is the node's position in layout order, -1 if there is none.
func (s *NodeSet) Index(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index(name)
}

// Update changes one node's record under the set's lock.
func (s *NodeSet) Update(name string, f func(n *Node)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(name); i >= 0 {
		f(&s.nodes[i])
	}
}

// index finds a node; the caller holds mu.
func (s *NodeSet) index(name string) int {
	for i := range s.nodes {
		if s.nodes[i].Name == name {
			return i
		}
	}
	return -1
}

// NodeByAddr is the node one of whose addresses is addr.
func (l *Local) NodeByAddr(addr string) (Node, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.nodes {
		if n.Answers(addr) {
			return n, true
		}
	}
	return Node{}, false
}

// WatcherAddrs lists the addresses of the nodes that watch the servers.
func (l *Local) WatcherAddrs() []string { return watcherAddrs(l.Nodes()) }

// ValkeyNodes lists the data nodes (not Sentinels).
func (l *Local) ValkeyNodes() []Node {
	var out []Node
	for _, n := range l.Nodes() {
		if !n.Watches() {
			out = append(out, n)
		}
	}
	return out
}

// Up writes fresh configs, starts the deployment's nodes and returns once
// WaitReady holds.
func (l *Local) Up(ctx context.Context) error {
	if err := os.MkdirAll(l.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	if l.cfg.NetProxy && l.proxies == nil {
		p, addrs, err := startNetProxies(l.Nodes(), func(Node) string { return "127.0.0.1" })
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.proxies = p
		for i := range l.nodes {
			l.nodes[i].Announce = addrs[l.nodes[i].Name]
		}
		// Sentinels monitor the first primary at its proxy, so that the
		// address they hand out is a proxy from the start.
		l.initialPrimary = l.nodes[0].Reach()
		l.mu.Unlock()
	}
	return l.cfg.valkey().Start(ctx, l)
}

// UpReplicated starts the primary, the replicas and the nodes that watch
// them (Sentinels, if any) in order, and returns once WaitReady holds.
func (l *Local) UpReplicated(ctx context.Context) error {
	linked := false
	for _, n := range l.Nodes() {
		if n.Watches() && !linked {
			linked = true
			// Sentinels learn replicas from the primary's INFO, which they
			// refresh only every 10 s: started before the replicas have
			// linked, they would take that long to see them.
			if err := l.waitReplicasLinked(ctx); err != nil {
				l.Down()
				return err
			}
		}
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		if err := l.WriteConfig(n, n.Kind == RoleReplica); err != nil {
			return err
		}
		if err := l.StartNode(n.Name); err != nil {
			l.Down()
			return err
		}
		if n.Kind == RolePrimary {
			// Replicas and Sentinels connect at once; give the primary its socket first.
			if err := l.WaitPing(ctx, n.Addr); err != nil {
				l.Down()
				return err
			}
		}
	}
	if err := l.SaveState(); err != nil {
		return err
	}
	if err := l.WaitReady(ctx); err != nil {
		l.Down()
		return err
	}
	return l.SaveState()
}

func (l *Local) waitReplicasLinked(ctx context.Context) error {
	primary := l.nodes[0]
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		inf, err := l.adm.info(ctx, primary.Addr, "replication")
		if err == nil && inf["connected_slaves"] == strconv.Itoa(l.cfg.Replicas) {
			online := 0
			for k, v := range inf {
				if strings.HasPrefix(k, "slave") && strings.Contains(v, "state=online") {
					online++
				}
			}
			if online == l.cfg.Replicas {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replicas did not link to %s within 20s (INFO: %v); see the logs under %s", primary.Name, inf, l.cfg.Dir)
		case <-time.After(PollEvery):
		}
	}
}

// WriteConfig renders n's config into its directory (as a replica of the
// current primary with asReplica).
func (l *Local) WriteConfig(n Node, asReplica bool) error {
	port := n.Addr[len("127.0.0.1:"):]
	p, _ := strconv.Atoi(port)
	var content string
	switch {
	case n.Watches():
		content = watcherKinds[n.Kind].Conf(&l.cfg, &n, p, l.initialPrimary)
	case asReplica:
		primary := l.initialPrimary
		if cur, err := l.Primary(context.Background()); err == nil {
			primary = cur.Reach()
		}
		if n.Answers(primary) {
			primary = ""
		}
		content = ValkeyConf(&l.cfg, &n, p, primary)
	default:
		content = ValkeyConf(&l.cfg, &n, p, "")
	}
	if err := writeFile(filepath.Join(n.Dir, "node.conf"), content); err != nil {
		return err
	}
	if l.cfg.FakeTime {
		return l.WriteOffset(n, "+0")
	}
	return nil
}

// StartNode starts the node's process with the config in its directory.
func (l *Local) StartNode(name string) error {
	n, _ := l.Node(name)
	conf := filepath.Join(n.Dir, "node.conf")
	bin, args := l.bins.ServerFor(l.cfg, name), []string{conf}
	if w, ok := watcherKinds[n.Kind]; ok {
		bin, args = l.bins.Program(w.Program), append([]string{conf}, w.Args...)
	}
	var env []string
	if l.cfg.FakeTime {
		// Only the wall clock is faked: CLOCK_MONOTONIC stays true, so the
		// history's timestamps and the server's own timers are unaffected.
		env = []string{
			"LD_PRELOAD=" + l.bins.FaketimeLib,
			"FAKETIME_TIMESTAMP_FILE=" + filepath.Join(n.Dir, "faketime.rc"),
			"FAKETIME_NO_CACHE=1",
			"FAKETIME_DONT_FAKE_MONOTONIC=1",
		}
	}
	p, err := spawn(bin, args, env, filepath.Join(n.Dir, "stdout.log"), l.cfg.Detached)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	l.mu.Lock()
	l.procs[name] = p
	i := l.index(name)
	l.nodes[i].PID, l.nodes[i].Killed, l.nodes[i].Paused = p.PID(), false, false
	l.mu.Unlock()
	return nil
}

// WaitPing waits until the server at addr answers PING.
func (l *Local) WaitPing(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if _, err := l.adm.do(ctx, addr, "PING"); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			n, _ := l.NodeByAddr(addr)
			return fmt.Errorf("%s (%s) did not answer PING within 10s; see %s", n.Name, addr, n.LogFile)
		case <-time.After(PollEvery):
		}
	}
}

// Down stops every node: SIGKILL, since nothing is persisted that a run needs.
func (l *Local) Down() error {
	l.adm.close()
	l.proxies.close()
	if err := l.stopCache(); err != nil {
		return err
	}
	if err := DownAll(l); err != nil {
		return err
	}
	return l.SaveState()
}

// SetPID records a node's process (0: down; killed: by a fault, for the
// run's end to restart).
func (s *NodeSet) SetPID(name string, pid int, killed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(name); i >= 0 {
		s.nodes[i].PID, s.nodes[i].Killed, s.nodes[i].Paused = pid, killed, false
	}
}

// killProc sends SIGKILL to a node's process and waits until it is gone.
func killProc(n Node) error {
	if n.PID == 0 {
		return fmt.Errorf("%s is already down", n.Name)
	}
	if err := signalPID(n.PID, syscall.SIGKILL); err != nil {
		return err
	}
	WaitGone(n.PID, 5*time.Second)
	return nil
}

// stopProc sends SIGTERM (SIGCONT first, in case it is paused), waits, and
// SIGKILLs what is still there after 10 s.
func stopProc(n Node) error {
	_ = signalPID(n.PID, syscall.SIGCONT)
	if err := signalPID(n.PID, syscall.SIGTERM); err != nil {
		return err
	}
	if !WaitGone(n.PID, 10*time.Second) {
		_ = signalPID(n.PID, syscall.SIGKILL)
		WaitGone(n.PID, 5*time.Second)
	}
	return nil
}

// MustNode is the node set's, and the cache instance once started.
func (l *Local) MustNode(name string) (Node, error) {
	if name == CacheNode {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.cache != nil {
			return *l.cache, nil
		}
	}
	return l.NodeSet.MustNode(name)
}

// Kill sends SIGKILL and waits until the process is gone.
func (l *Local) Kill(name string) error {
	n, err := l.MustNode(name)
	if err != nil {
		return err
	}
	if err := killProc(n); err != nil {
		return err
	}
	l.adm.drop(n.Addr)
	l.SetPID(name, 0, true)
	return l.SaveState()
}

// Stop sends SIGTERM (SIGCONT first, in case it is paused) and waits.
func (l *Local) Stop(name string) error {
	n, err := l.MustNode(name)
	if err != nil {
		return err
	}
	if n.PID == 0 {
		return nil
	}
	if err := stopProc(n); err != nil {
		return err
	}
	l.adm.drop(n.Addr)
	l.SetPID(name, 0, true)
	return l.SaveState()
}

// Pause sends SIGSTOP: the node keeps its sockets but answers nothing.
func (l *Local) Pause(name string) error { return l.Signal(name, syscall.SIGSTOP, true) }

// Resume sends SIGCONT.
func (l *Local) Resume(name string) error { return l.Signal(name, syscall.SIGCONT, false) }

// Restart starts a stopped or killed node again (killing it first if it runs).
func (l *Local) Restart(ctx context.Context, name string, mode RestartMode) error {
	n, err := l.MustNode(name)
	if err != nil {
		return err
	}
	if n.PID != 0 {
		if err := l.Kill(name); err != nil {
			return err
		}
	}
	if !n.Watches() && mode == AsReplica && l.cfg.valkey().RejoinsAsReplica() {
		if err := l.WriteConfig(n, true); err != nil {
			return err
		}
	}
	if err := l.StartNode(name); err != nil {
		return err
	}
	if err := l.WaitPing(ctx, n.Addr); err != nil {
		return err
	}
	return l.SaveState()
}

// CollectLogs copies every node's log into dst as <name>.log.
func (l *Local) CollectLogs(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	nodes := l.Nodes()
	l.mu.Lock()
	if l.cache != nil {
		nodes = append(nodes, *l.cache)
	}
	l.mu.Unlock()
	for _, n := range nodes {
		if err := CopyFile(n.LogFile, filepath.Join(dst, n.Name+".log")); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// state is cluster.json: what `cluster status` and `cluster down` read back.
type state struct {
	Config  Config `json:"config"`
	Version string `json:"version"`
	Nodes   []Node `json:"nodes"`
	Initial string `json:"initial_primary"`
}

// StateFile is the name of the topology record in a run directory.
const StateFile = "cluster.json"

// SaveState writes the runtime's state file (what `cluster down` reads).
func (l *Local) SaveState() error {
	s := state{Config: l.cfg, Version: l.bins.Version, Nodes: l.Nodes(), Initial: l.initialPrimary}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode cluster state: %w", err)
	}
	return writeFile(filepath.Join(l.cfg.Dir, StateFile), string(b)+"\n")
}

// LoadLocal reopens a detached cluster from its run directory.
func LoadLocal(dir string, bins Binaries) (*Local, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("no cluster in %s (no %s): start one with 'lockjepsen cluster up --dir %s'", dir, StateFile, dir)
		}
		return nil, fmt.Errorf("read cluster state: %w", err)
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s/%s is corrupt: %w", dir, StateFile, err)
	}
	bins.Version = s.Version
	l := &Local{cfg: s.Config, bins: bins, NodeSet: NodeSet{nodes: s.Nodes}, procs: map[string]*Proc{}, adm: newAdmin(), initialPrimary: s.Initial}
	return l, nil
}

// Command runs one command on a node and returns its reply as text; the
// nemesis uses it for CLIENT KILL and the like.
func (l *Local) Command(ctx context.Context, name string, args ...string) (string, error) {
	n, err := l.MustNode(name)
	if err != nil {
		return "", err
	}
	r, err := l.adm.do(ctx, n.Addr, args...)
	if err != nil {
		return "", err
	}
	m, err := r.ToMessage()
	if err != nil {
		return "", err
	}
	return replyText(m), nil
}

// replyText renders a reply as text: strings and numbers as they are, arrays
// flattened one element a line (SENTINEL REPLICAS gives field, value, ...).
func replyText(r valkey.ValkeyMessage) string {
	if s, err := r.ToString(); err == nil {
		return s
	}
	if i, err := r.AsInt64(); err == nil {
		return fmt.Sprint(i)
	}
	if arr, err := r.ToArray(); err == nil {
		parts := make([]string, len(arr))
		for i, e := range arr {
			parts[i] = replyText(e)
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// PrimaryByRole finds the one live, unpaused data node whose INFO says
// role:master.
func (l *Local) PrimaryByRole(ctx context.Context) (Node, error) {
	var found []Node
	for _, n := range l.ValkeyNodes() {
		if n.PID == 0 || n.Paused {
			continue
		}
		if inf, err := l.adm.info(ctx, n.Addr, "replication"); err == nil && inf["role"] == "master" {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Node{}, fmt.Errorf("no live node answers as primary")
	}
	var names []string
	for _, n := range found {
		names = append(names, n.Name)
	}
	return Node{}, fmt.Errorf("%s all answer as primary", strings.Join(names, ", "))
}

// Info returns INFO <section> of the node at addr as a field map.
func (l *Local) Info(ctx context.Context, addr, section string) (map[string]string, error) {
	return l.adm.info(ctx, addr, section)
}

// Do runs one command on the server at addr through the harness's own
// connection.
func (l *Local) Do(ctx context.Context, addr string, args ...string) (valkey.ValkeyResult, error) {
	return l.adm.do(ctx, addr, args...)
}
