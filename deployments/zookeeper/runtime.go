package zookeeper

import (
	"bufio"
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
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Debian's zookeeper package puts the server in zookeeper.jar, whose
// manifest's Class-Path names every jar it needs (the package's zkEnv.sh
// runs it with that jar alone). slf4j-simple (from libslf4j-java, one of
// them) is added as the logging binding, so that a member logs to its
// stdout, the member's log file; without a binding it would log nothing.
var zkJars = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"}

// FindZooKeeper is the java binary and the server's classpath:
// $LOCKJEPSEN_ZK_CLASSPATH, else the jars of Debian's zookeeper package.
func FindZooKeeper() (java, classpath string, err error) {
	java = os.Getenv("LOCKJEPSEN_JAVA")
	if java == "" {
		if java, err = exec.LookPath("java"); err != nil {
			return "", "", fmt.Errorf("--topology zookeeper needs a Java runtime, which is not on PATH: run 'make setup' (installs Debian's zookeeper and default-jre-headless) or set LOCKJEPSEN_JAVA")
		}
	}
	if cp := os.Getenv("LOCKJEPSEN_ZK_CLASSPATH"); cp != "" {
		return java, cp, nil
	}
	if _, err := os.Stat(zkJars[0]); err != nil {
		return "", "", fmt.Errorf("--topology zookeeper needs Debian's zookeeper package (%s not found): run 'make setup' or set LOCKJEPSEN_ZK_CLASSPATH", zkJars[0])
	}
	cp := zkJars[0]
	if _, err := os.Stat(zkJars[1]); err == nil {
		cp += ":" + zkJars[1]
	}
	return java, cp, nil
}

// zkMain is the ensemble member's entry point (zkServer.sh's).
const zkMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// Local runs the ZooKeeper members as processes on 127.0.0.1, each with
// its data dir, myid and zoo.cfg under the run folder.
type Local struct {
	cfg              cluster.Config
	java, cp         string
	quorum           []string // "127.0.0.1:quorum:election" of each member, in node order
	*cluster.NodeSet          // Addr: the client port
	mu               sync.Mutex
	version          string                   // as srvr says, once ready; guarded by mu
	procs            map[string]*cluster.Proc // guarded by mu
	fourLWait        time.Duration
}

var _ cluster.Runtime = (*Local)(nil)

func newLocal(cfg cluster.Config) (*Local, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("cluster config: no run directory")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	java, cp, err := FindZooKeeper()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	cfg.Dir = dir
	// Three ports a member: clients, quorum (followers to the leader),
	// leader election.
	ports, err := cluster.FreePorts(cfg.BasePort, 3*cfg.Members)
	if err != nil {
		return nil, err
	}
	z := newMembers(cfg, &cluster.NodeSet{})
	z.java, z.cp = java, cp
	for i, n := range (deployment{}).Layout(cfg) {
		n.Dir = filepath.Join(dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*i]))
		z.Add(n)
		z.quorum = append(z.quorum, fmt.Sprintf("127.0.0.1:%d:%d", ports[3*i+1], ports[3*i+2]))
	}
	return z, nil
}

// newMembers is the member table over set, no process yet.
func newMembers(cfg cluster.Config, set *cluster.NodeSet) *Local {
	return &Local{cfg: cfg, NodeSet: set, procs: map[string]*cluster.Proc{}, fourLWait: 500 * time.Millisecond}
}

func (z *Local) Version() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.version == "" {
		return "ZooKeeper"
	}
	return "ZooKeeper " + z.version
}
func (z *Local) WatcherAddrs() []string   { return nil }
func (z *Local) Config() cluster.Config   { return z.cfg }
func (z *Local) Pause(name string) error  { return z.Signal(name, syscall.SIGSTOP, true) }
func (z *Local) Resume(name string) error { return z.Signal(name, syscall.SIGCONT, false) }

// SetClockOffset refuses: see ErrClock.
func (z *Local) SetClockOffset(string, string) error { return ErrClock }

// Command is a Valkey notion; a member answers four-letter words (srvr).
func (z *Local) Command(context.Context, string, ...string) (string, error) {
	return "", fmt.Errorf("ZooKeeper members take no Valkey commands")
}

// zooCfg is a member's configuration on the local runtime: its data dir
// under the run folder, its client port on 127.0.0.1.
func (z *Local) zooCfg(n cluster.Node) string {
	_, port, _ := net.SplitHostPort(n.Addr)
	return zooCfg(filepath.Join(n.Dir, "data"), port, "127.0.0.1", z.quorum)
}

// zooCfg is a member's configuration: quorum lines "host:quorum:election"
// in member order (myid i+1). The four-letter words srvr and mntr are the
// readiness and leader probes; the admin server (an HTTP port per member)
// is off; sessions may be as long as a minute, so that a client's session
// timeout is the lock's TTL as asked, never clamped to 20 ticks. An empty
// clientAddr listens on every interface (a container's), and the quorum
// ports then do too.
func zooCfg(dataDir, clientPort, clientAddr string, quorum []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", Tick.Milliseconds(), initLimit, syncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%s\n", dataDir, clientPort)
	if clientAddr != "" {
		fmt.Fprintf(&b, "clientPortAddress=%s\n", clientAddr)
	} else {
		b.WriteString("quorumListenOnAllIPs=true\n")
	}
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=60000\n", 2*Tick.Milliseconds())
	b.WriteString("4lw.commands.whitelist=srvr,mntr,ruok\nadmin.enableServer=false\n")
	// One member runs standalone; more form a quorum.
	fmt.Fprintf(&b, "standaloneEnabled=%v\n", len(quorum) == 1)
	b.WriteString("preAllocSize=4096\n")
	for j, q := range quorum {
		fmt.Fprintf(&b, "server.%d=%s\n", j+1, q)
	}
	return b.String()
}

// Up writes every member's zoo.cfg and myid into a fresh data dir, starts
// them and waits until one leads and every other follows.
func (z *Local) Up(ctx context.Context) error {
	for i, n := range z.Nodes() {
		data := filepath.Join(n.Dir, "data")
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(data, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", data, err)
		}
		if err := writeFile(filepath.Join(data, "myid"), strconv.Itoa(i+1)+"\n"); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(n.Dir, "zoo.cfg"), z.zooCfg(n)); err != nil {
			return err
		}
		if err := z.start(n.Name); err != nil {
			_ = z.Down()
			return err
		}
	}
	if err := z.WaitReady(ctx); err != nil {
		_ = z.Down()
		return err
	}
	return nil
}

// start runs one member's JVM. With its data dir kept (a restart) the
// member reloads its snapshot and log and rejoins as a follower.
func (z *Local) start(name string) error {
	n, err := z.MustNode(name)
	if err != nil {
		return err
	}
	args := zkJVMArgs(n.Dir, "", z.cp, filepath.Join(n.Dir, "zoo.cfg"))
	p, err := cluster.Spawn{Bin: z.java, Args: args, Log: n.LogFile, Detached: z.cfg.Detached}.Start()
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	z.mu.Lock()
	z.procs[name] = p
	z.mu.Unlock()
	z.SetPID(name, p.PID(), false)
	return nil
}

// zkJVMArgs is a member's JVM command line after the java binary. With
// logFile set, slf4j-simple writes there rather than to stderr (a
// container's, which nobody keeps).
func zkJVMArgs(logDir, logFile, classpath, zooCfg string) []string {
	args := []string{
		// Small heaps and the client compiler: three JVMs share two cores.
		"-Xms32m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dzookeeper.log.dir=" + logDir, "-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
	}
	if logFile != "" {
		args = append(args, "-Dorg.slf4j.simpleLogger.logFile="+logFile)
	}
	return append(args, "-cp", classpath, zkMain, zooCfg)
}

// saveState writes cluster.json (the members and their pids), as every
// local runtime does.
func (z *Local) saveState() error { return cluster.SaveState(z.cfg, z.Version(), z.Nodes()) }

// writeFile replaces a member's file whole (a reader never sees half of it).
func writeFile(path, content string) error {
	return runfolder.Replace(path, []byte(content), 0o644)
}

// zkStatus is one member's answer to srvr.
type zkStatus struct {
	Mode  string // leader, follower, standalone
	Zxid  int64
	Epoch int64 // the leader's epoch: Zxid's high 32 bits
	Ver   string
}

var (
	zkModeRE    = regexp.MustCompile(`(?m)^Mode: (\w+)`)
	zkZxidRE    = regexp.MustCompile(`(?m)^Zxid: 0x([0-9a-fA-F]+)`)
	zkVersionRE = regexp.MustCompile(`(?m)^Zookeeper version: ([0-9.]+)`)
)

// srvr asks one member the four-letter word srvr; a member that is not in
// a quorum answers that it is not serving, an error here.
func (z *Local) srvr(ctx context.Context, n cluster.Node) (zkStatus, error) {
	if n.PID == 0 || n.Paused {
		return zkStatus{}, fmt.Errorf("%s is down or paused", n.Name)
	}
	d := net.Dialer{Timeout: z.fourLWait}
	ctx, cancel := context.WithTimeout(ctx, z.fourLWait)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", n.Addr)
	if err != nil {
		return zkStatus{}, fmt.Errorf("%s srvr: %w", n.Name, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	if _, err := c.Write([]byte("srvr")); err != nil {
		return zkStatus{}, fmt.Errorf("%s srvr: %w", n.Name, err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	out := b.String()
	m := zkModeRE.FindStringSubmatch(out)
	if m == nil {
		return zkStatus{}, fmt.Errorf("%s srvr: not serving (%q)", n.Name, strings.TrimSpace(out))
	}
	s := zkStatus{Mode: m[1]}
	if x := zkZxidRE.FindStringSubmatch(out); x != nil {
		s.Zxid, _ = strconv.ParseInt(x[1], 16, 64)
		s.Epoch = s.Zxid >> 32
	}
	if v := zkVersionRE.FindStringSubmatch(out); v != nil {
		s.Ver = v[1]
	}
	return s, nil
}

// leaderOnce asks every live member and returns the one in leader (or
// standalone) mode with the highest epoch: a resumed old leader may still
// believe it leads until it hears it lost.
func (z *Local) leaderOnce(ctx context.Context, except string) (cluster.Node, error) {
	var best cluster.Node
	bestEpoch := int64(-1)
	var errs []string
	for _, n := range z.Nodes() {
		s, err := z.srvr(ctx, n)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if (s.Mode == "leader" || s.Mode == "standalone") && n.Name != except && s.Epoch > bestEpoch {
			best, bestEpoch = n, s.Epoch
		}
	}
	if bestEpoch < 0 {
		return cluster.Node{}, fmt.Errorf("no member leads (%s)", strings.Join(errs, "; "))
	}
	return best, nil
}

// Primary is the Zab leader: the member whose srvr says Mode: leader.
func (z *Local) Primary(ctx context.Context) (cluster.Node, error) {
	return cluster.PollUntil(ctx, 10*time.Second, "no ZooKeeper leader", func(ctx context.Context) (cluster.Node, error) { return z.leaderOnce(ctx, "") })
}

// WaitFailover waits until a member other than from leads.
func (z *Local) WaitFailover(ctx context.Context, from string) (cluster.Node, error) {
	return cluster.PollUntil(ctx, cluster.ReadyTimeout, "no new ZooKeeper leader", func(ctx context.Context) (cluster.Node, error) { return z.leaderOnce(ctx, from) })
}

// WaitReady: every live, unpaused member serves, exactly one as leader.
func (z *Local) WaitReady(ctx context.Context) error {
	_, err := cluster.PollUntil(ctx, cluster.ReadyTimeout, "ZooKeeper ensemble not ready (see the logs under "+z.cfg.Dir+")",
		func(ctx context.Context) (cluster.Node, error) { return cluster.Node{}, z.readyOnce(ctx) })
	return err
}

func (z *Local) readyOnce(ctx context.Context) error {
	leaders := 0
	for _, n := range z.Nodes() {
		if n.Paused || n.PID == 0 {
			continue
		}
		s, err := z.srvr(ctx, n)
		if err != nil {
			return err
		}
		if s.Mode == "leader" || s.Mode == "standalone" {
			leaders++
		}
		if s.Ver != "" {
			z.mu.Lock()
			if z.version == "" {
				z.version = s.Ver
			}
			z.mu.Unlock()
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d members lead", leaders)
	}
	return nil
}

// SetPID records a member's process and saves the state file.
func (z *Local) SetPID(name string, pid int, killed bool) {
	z.NodeSet.SetPID(name, pid, killed)
	_ = z.saveState()
}

// Kill sends SIGKILL and waits until the member is gone.
func (z *Local) Kill(name string) error {
	return cluster.KillMember(z, name)
}

// Stop sends SIGTERM (SIGCONT first) and waits.
func (z *Local) Stop(name string) error {
	return cluster.StopMember(z, name)
}

// Restart starts a member again with its data dir: it rejoins as a
// follower and syncs from the leader. The mode is a Valkey notion.
func (z *Local) Restart(ctx context.Context, name string, _ cluster.RestartMode) error {
	return cluster.RestartMember(ctx, z, name, z.start, z.awaitServe)
}

// awaitServe waits until a restarted member answers srvr: a JVM takes a
// second or two before it serves.
func (z *Local) awaitServe(ctx context.Context, name string) error {
	n, err := z.MustNode(name)
	if err != nil {
		return err
	}
	_, err = cluster.PollUntil(ctx, 20*time.Second, name+" did not serve after its restart; see "+n.LogFile,
		func(ctx context.Context) (cluster.Node, error) {
			n, _ := z.Node(name)
			_, err := z.srvr(ctx, n)
			return n, err
		})
	return err
}

// Down SIGKILLs every member.
func (z *Local) Down() error { return cluster.DownAll(z) }

// CollectLogs copies every member's log into dst as <name>.log.
func (z *Local) CollectLogs(dst string) error { return cluster.CollectMemberLogs(z.Nodes(), dst) }
