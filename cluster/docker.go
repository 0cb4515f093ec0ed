package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// The Docker runtime runs every node in its own container, from the locally
// built lockjepsen/valkey image, and acts on them through the Docker Engine API.
//
// Addressing. Every node has a "home" network of its own: an internal bridge
// network holding the node's announced address, to which every other node of
// the run is attached as well. A node reaches a peer through the peer's home
// network; the host (where the runner, the clients and the fenced resource
// run) is the gateway of every bridge and reaches every home address directly,
// without port publishing or NAT. Sentinel therefore hands the clients
// addresses they can dial, and announces exactly those (announce-ip,
// replica-announce-ip).
//
// Why one network per node rather than one shared network: a partition must
// cut the primary off from the Sentinels and replicas while the clients on the
// host still reach it, which is what makes it a split brain. Disconnecting a
// node from one shared network would cut the host off too. With home networks,
// Partition disconnects the node from every peer's home network and every peer
// from the node's home network, and the host keeps its route to the node.
// The networks are internal: no default route, no NAT, so no container can
// send a packet anywhere but to the run's own networks and the host.

const (
	dockerImageRepo    = "lockjepsen/valkey"
	dockerLabelRun     = "org.lockjepsen.run"
	dockerLabelNode    = "org.lockjepsen.node"
	dockerLabelOwner   = "org.lockjepsen.owner-pid"
	dockerLabelCompose = "org.lockjepsen.compose"
	dockerValkeyPort   = 6379
	dockerData         = "/data"
	dockerFaketimeLib  = "/usr/lib/faketime/libfaketime.so.1"
	// defaultDockerPool is carved into /27 subnets, one per node's home network.
	// Docker refuses a subnet that overlaps one of its networks; Up also refuses
	// a pool that overlaps a host route, so no traffic leaves for a real network.
	defaultDockerPool = "10.213.0.0/16"
	dockerSubnetBits  = 27
)

// Docker is the container runtime. Topology queries (Primary, WaitReady,
// WaitFailover, Command) are the Local runtime's, run against container
// addresses: they only speak the Valkey protocol.
type Docker struct {
	cfg   Config
	bins  Binaries
	image string
	runID string
	api   *client.Client
	topo  *Local // node records and the admin client; never starts a process
	// svc is the members' service when they are not Valkey (a deployment
	// that is DockerServed); nil on the Valkey topologies.
	svc DockerService
	// set is the node list of whichever topology runs (topo's or the
	// service's), and q its queries (primary or leader, readiness, logs).
	set *NodeSet
	q   dockerQueries

	mu          sync.Mutex
	ids         map[string]string // node name -> container ID
	homes       []dockerNet       // home network of node i (same order as nodes)
	partitioned map[string]bool
	isolated    map[string]bool // cut off from the clients too (Isolate)
	// proxies are --net-proxy's (netproxy.go): in this process, each
	// node's pair listening on the host's address on the node's home
	// network, so that its peers reach them there and a partition cuts
	// them off as it cuts off the node.
	proxies *netProxies
}

// dockerQueries are the topology's own questions, asked over the network
// (Valkey protocol or a consensus service's client API): the same code as on
// the local runtime, run against container addresses.
type dockerQueries interface {
	Primary(ctx context.Context) (Node, error)
	WaitFailover(ctx context.Context, from string) (Node, error)
	WaitReady(ctx context.Context) error
	CollectLogs(dst string) error
}

// A DockerService is a deployment's members as the Docker runtime runs them
// when they are not Valkey (a consensus service): the runtime makes the
// networks and containers and starts, stops, pauses and cuts them as it does
// any node; the service says what only it knows, from the deployment's own
// folder, so that the runtime names no deployment.
type DockerService interface {
	dockerQueries
	// Image is the image the members run; ImageAdvice says how to build it
	// when the daemon does not have it.
	Image() string
	ImageAdvice() string
	// ClientPort is the port a member serves its clients on in its container.
	ClientPort() int
	// Placed is told the members once each has its container address (its
	// peers' addresses are known from then on).
	Placed(nodes []Node)
	// Prepare writes what member n reads from its bind-mounted directory
	// (DockerData) before its container is created.
	Prepare(n Node) error
	// Argv is member n's command line in its container.
	Argv(n Node) []string
	// Version names the service and its version; label reads one label of
	// the run's image ("" when missing).
	Version(label func(string) string) string
	// Exec is Runtime.Command on a member.
	Exec(ctx context.Context, name string, args ...string) (string, error)
	// AwaitAnswer waits until a restarted member serves again.
	AwaitAnswer(ctx context.Context, name string) error
	// Close releases the service's own clients (at Down).
	Close()
}

// DockerServed is a deployment whose members run as a DockerService: set is
// the node table the runtime keeps (laid out; each address is set at Up).
type DockerServed interface {
	DockerService(cfg Config, set *NodeSet) DockerService
}

// DockerData is where a node's bind-mounted directory appears in its
// container (its config, data dir and log).
const DockerData = dockerData

var (
	_ Runtime     = (*Docker)(nil)
	_ Partitioner = (*Docker)(nil)
)

func init() {
	newDocker = func(cfg Config, bins Binaries) (Runtime, error) { return NewDocker(cfg, bins) }
}

// DockerImage is the Valkey image a run uses: $LOCKJEPSEN_VALKEY_IMAGE, else
// lockjepsen/valkey:<version of the local build> (what `make images` tags).
func DockerImage(bins Binaries) string {
	if s := os.Getenv("LOCKJEPSEN_VALKEY_IMAGE"); s != "" {
		return s
	}
	return dockerImageRepo + ":" + bins.Version
}

// NewDocker validates cfg and lays out the nodes; nothing is created until Up.
func NewDocker(cfg Config, bins Binaries) (*Docker, error) {
	if err := cfg.validateWithDir(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	cfg.Dir = dir
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("run id: %w", err)
	}
	d := &Docker{
		cfg: cfg, bins: bins, image: DockerImage(bins), runID: "lj-" + hex.EncodeToString(b[:]),
		ids: map[string]string{}, partitioned: map[string]bool{}, isolated: map[string]bool{},
	}
	d.topo = &Local{cfg: cfg, bins: bins, procs: map[string]*Proc{}, adm: newAdmin()}
	if s, ok := cfg.Deployment().(DockerServed); ok {
		set := &NodeSet{}
		for _, n := range cfg.Deployment().Layout(cfg) {
			n.Dir = filepath.Join(cfg.Dir, n.Name)
			n.LogFile = filepath.Join(n.Dir, n.Name+".log")
			set.nodes = append(set.nodes, n)
		}
		d.svc = s.DockerService(cfg, set)
		d.image, d.set, d.q = d.svc.Image(), set, d.svc
		return d, nil
	}
	d.set, d.q = &d.topo.NodeSet, d.topo
	cfg.valkey().LayoutDocker(d)
	return d, nil
}

// layoutValkey lays out a Valkey deployment's containers: its nodes, whose
// addresses are known once Up has made the networks.
func (d *Docker) layoutValkey() {
	for _, n := range d.cfg.Deployment().Layout(d.cfg) {
		n.Dir = filepath.Join(d.cfg.Dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		d.topo.nodes = append(d.topo.nodes, n)
	}
}

// meshed reports whether every node is attached to every other node's home
// network (the deployment says: not Redlock's, whose primaries never talk).
func (d *Docker) meshed() bool { return d.svc != nil || d.cfg.valkey().Meshed() }

// RunID is the prefix of every container and network name of this run, and the
// value of their org.lockjepsen.run label.
func (d *Docker) RunID() string { return d.runID }

// Config returns the validated config.
func (d *Docker) Config() Config { return d.cfg }

// Version is the Valkey version the image was built from (the service's
// own, as it says, when the members are not Valkey).
func (d *Docker) Version() string {
	if d.svc != nil {
		return d.svc.Version(d.imageLabel)
	}
	return d.bins.Version
}

// consensus reports whether the run's members are a consensus service's
// (DockerServed): no Valkey, no admin connections, no clock to move.
func (d *Docker) consensus() bool { return d.svc != nil }

// imageLabel is one label of the run's image, "" when the daemon or the
// label is missing.
func (d *Docker) imageLabel(label string) string {
	api := d.api
	if api == nil {
		c, err := client.New(client.FromEnv)
		if err != nil {
			return ""
		}
		defer c.Close()
		api = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := api.ImageInspect(ctx, d.image)
	if err != nil || r.Config == nil {
		return ""
	}
	return r.Config.Labels[label]
}

// Nodes returns a snapshot of every node; Addr is the node's container address.
func (d *Docker) Nodes() []Node { return d.set.Nodes() }

// Node returns one node by name.
func (d *Docker) Node(name string) (Node, bool) { return d.set.Node(name) }

// WatcherAddrs lists the container addresses of the nodes that watch the
// servers.
func (d *Docker) WatcherAddrs() []string { return watcherAddrs(d.Nodes()) }

// Primary returns the node a majority of Sentinels names as primary (the
// service's leader on a consensus topology; none on the redlock topology).
func (d *Docker) Primary(ctx context.Context) (Node, error) { return d.q.Primary(ctx) }

// WaitFailover waits until a majority of Sentinels name a primary other than from.
func (d *Docker) WaitFailover(ctx context.Context, from string) (Node, error) {
	return d.q.WaitFailover(ctx, from)
}

// WaitReady waits for one primary, linked replicas and agreeing Sentinels
// (every node answering PING on redlock, one leader on a consensus service).
func (d *Docker) WaitReady(ctx context.Context) error { return d.q.WaitReady(ctx) }

// Command runs one command on a node.
func (d *Docker) Command(ctx context.Context, name string, args ...string) (string, error) {
	if d.svc != nil {
		return d.svc.Exec(ctx, name, args...)
	}
	return d.topo.Command(ctx, name, args...)
}

// Status reports each node as it describes itself (for tests and tools).
func (d *Docker) Status(ctx context.Context) []Status { return d.topo.Status(ctx) }

func (d *Docker) index(name string) int { return d.set.Index(name) }

func (d *Docker) update(name string, f func(n *Node)) { d.set.Update(name, f) }

func (d *Docker) container(name string) (Node, string, error) {
	n, ok := d.set.Node(name)
	if !ok {
		return n, "", fmt.Errorf("no node named %q", name)
	}
	d.mu.Lock()
	id := d.ids[name]
	d.mu.Unlock()
	if id == "" {
		return n, "", fmt.Errorf("%s has no container (the cluster is not up)", name)
	}
	return n, id, nil
}

// connect opens the Engine API client and says plainly when Docker is absent.
func (d *Docker) connect(ctx context.Context) error {
	if d.api != nil {
		return nil
	}
	api, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := api.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		api.Close()
		return fmt.Errorf("Docker is not running or not reachable (%v): start it (systemctl start docker), or use --runtime local", err)
	}
	d.api = api
	return nil
}

// Preflight is what Up checks before it creates anything: Docker reachable,
// the image built, no compose topology in the way. It leaves no connection
// open, so a command can ask before it prints its banner.
func (d *Docker) Preflight(ctx context.Context) error {
	if err := d.connect(ctx); err != nil {
		return err
	}
	defer func() { d.api.Close(); d.api = nil }()
	return d.preflight(ctx)
}

// preflight refuses to start beside a compose topology or the leftovers of a
// run whose lockjepsen process is gone; other live runs are left alone, since
// run ids keep parallel runs apart.
func (d *Docker) preflight(ctx context.Context) error {
	if _, err := d.api.ImageInspect(ctx, d.image); err != nil {
		if cerrdefs.IsNotFound(err) {
			if d.svc != nil {
				return fmt.Errorf("image %s is not built: %s", d.image, d.svc.ImageAdvice())
			}
			return fmt.Errorf("image %s is not built: run 'make images' (scripts/build-images.sh)", d.image)
		}
		return fmt.Errorf("inspect image %s: %w", d.image, err)
	}
	if d.cfg.FakeTime && !strings.HasPrefix(d.image, dockerImageRepo+":") {
		return fmt.Errorf("clock faults need libfaketime, which only the %s image carries (LOCKJEPSEN_VALKEY_IMAGE=%s): unset LOCKJEPSEN_VALKEY_IMAGE or choose a scenario without clock faults", dockerImageRepo, d.image)
	}
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", dockerLabelCompose)})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	if len(list.Items) > 0 {
		return fmt.Errorf("a docker-compose lockjepsen topology is up (%s): stop it with 'docker-compose down' first; two topologies on one machine distort each other's timing", containerNames(list.Items))
	}
	list, err = d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", dockerLabelRun)})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	stale := map[string][]container.Summary{}
	for _, c := range list.Items {
		pid, _ := strconv.Atoi(c.Labels[dockerLabelOwner])
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			continue // a live parallel run
		}
		stale[c.Labels[dockerLabelRun]] = append(stale[c.Labels[dockerLabelRun]], c)
	}
	for run, cs := range stale {
		return fmt.Errorf("containers of an earlier run whose lockjepsen process is gone are still up (%s): remove them with 'docker rm -f $(docker ps -aq --filter label=%s=%s) && docker network prune -f --filter label=%s=%s'",
			containerNames(cs), dockerLabelRun, run, dockerLabelRun, run)
	}
	return nil
}

func containerNames(cs []container.Summary) string {
	var names []string
	for _, c := range cs {
		if len(c.Names) > 0 {
			names = append(names, strings.TrimPrefix(c.Names[0], "/"))
		}
	}
	if len(names) > 4 {
		names = append(names[:4], fmt.Sprintf("and %d more", len(names)-4))
	}
	return strings.Join(names, ", ")
}

func (d *Docker) labels(node string) map[string]string {
	l := map[string]string{dockerLabelRun: d.runID, dockerLabelOwner: strconv.Itoa(os.Getpid())}
	if node != "" {
		l[dockerLabelNode] = node
	}
	return l
}

func (d *Docker) port(n Node) int {
	if w, ok := watcherKinds[n.Kind]; ok {
		return w.Port
	}
	switch n.Kind {
	case RoleMember:
		return d.svc.ClientPort()
	}
	return dockerValkeyPort
}

// Up creates the run's networks and containers, starts the primary, the
// replicas and the Sentinels, and returns once WaitReady holds. On failure
// everything created so far is removed.
func (d *Docker) Up(ctx context.Context) (err error) {
	if err := d.connect(ctx); err != nil {
		return err
	}
	if err := d.preflight(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(d.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = d.Down()
		}
	}()
	nodes := d.Nodes()
	if err := d.createNetworks(ctx, len(nodes)); err != nil {
		return err
	}
	for i, n := range nodes {
		addr := netip.AddrPortFrom(addrOn(d.homes[i], i), uint16(d.port(n))).String()
		d.update(n.Name, func(x *Node) { x.Addr = addr })
	}
	if d.svc != nil {
		d.svc.Placed(d.Nodes())
	}
	if d.cfg.NetProxy {
		p, announced, err := startNetProxies(d.Nodes(), func(n Node) string {
			return d.homes[d.index(n.Name)].prefix.Addr().Next().String() // .1, the host
		})
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.proxies = p
		d.mu.Unlock()
		for name, a := range announced {
			d.update(name, func(x *Node) { x.Announce = a })
		}
	}
	// Sentinels monitor the first primary at its proxy, when there is one.
	d.topo.initialPrimary = d.Nodes()[0].Reach()
	for _, n := range d.Nodes() {
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		if d.svc != nil {
			if err := d.svc.Prepare(n); err != nil {
				return err
			}
		} else if err := d.writeConfig(ctx, n, n.Kind == RoleReplica); err != nil {
			return err
		}
		if err := d.createContainer(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range d.Nodes() {
		if err := d.start(ctx, n.Name); err != nil {
			return err
		}
		if n.Kind == RolePrimary {
			if err := d.topo.WaitPing(ctx, n.Addr); err != nil {
				return d.withLog(n, err)
			}
		}
	}
	return d.WaitReady(ctx)
}

// withLog adds the tail of a node's log to an error: a container that exits at
// once (bad config, missing library) explains itself there.
func (d *Docker) withLog(n Node, err error) error {
	b, rerr := os.ReadFile(n.LogFile)
	if rerr != nil || len(b) == 0 {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return fmt.Errorf("%w; %s log ends:\n  %s", err, n.Name, strings.Join(lines, "\n  "))
}

func (d *Docker) createContainer(ctx context.Context, n Node) error {
	i := d.index(n.Name)
	conf := dockerData + "/node.conf"
	cmd := []string{"/usr/local/bin/valkey-server", conf}
	if w, ok := watcherKinds[n.Kind]; ok {
		cmd = append([]string{"/usr/local/bin/" + w.Program, conf}, w.Args...)
	} else if n.Kind == RoleMember {
		cmd = d.svc.Argv(n)
	}
	var env []string
	if d.cfg.FakeTime && !d.consensus() {
		// As on the local runtime: only the wall clock is faked.
		env = []string{
			"LD_PRELOAD=" + dockerFaketimeLib,
			"FAKETIME_TIMESTAMP_FILE=" + dockerData + "/faketime.rc",
			"FAKETIME_NO_CACHE=1",
			"FAKETIME_DONT_FAKE_MONOTONIC=1",
		}
	}
	name := d.runID + "-" + n.Name
	home := d.homes[i]
	r, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image: d.image, Cmd: cmd, Env: env, Hostname: n.Name, Labels: d.labels(n.Name),
			// The official image's entrypoint would drop to uid 999; these
			// containers run the binary directly and may write the bind mount.
			Entrypoint: []string{},
			WorkingDir: dockerData,
		},
		HostConfig: &container.HostConfig{
			Binds:       []string{n.Dir + ":" + dockerData},
			NetworkMode: container.NetworkMode(home.name),
		},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			home.name: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: addrOn(home, i)}},
		}},
	})
	if err != nil {
		return fmt.Errorf("create container %s: %w", name, err)
	}
	d.mu.Lock()
	d.ids[n.Name] = r.ID
	d.mu.Unlock()
	if !d.meshed() {
		return nil
	}
	// API 1.41 (Docker 20.10) takes one network at create; join the others now.
	for j, h := range d.homes {
		if j == i {
			continue
		}
		if err := d.join(ctx, h, r.ID, i); err != nil {
			return fmt.Errorf("attach %s to %s: %w", name, h.name, err)
		}
	}
	return nil
}

// writeConfig renders the node's config with the local runtime's renderers and
// adapts what differs in a container: it listens on all its interfaces, keeps
// its files in the bind-mounted /data, and announces its home address.
func (d *Docker) writeConfig(ctx context.Context, n Node, asReplica bool) error {
	inside := n
	inside.Dir, inside.LogFile = dockerData, dockerData+"/"+n.Name+".log"
	host, _, _ := strings.Cut(n.Addr, ":")
	var content string
	switch {
	case n.Watches():
		w := watcherKinds[n.Kind]
		content = w.Conf(&d.cfg, &inside, w.Port, d.topo.initialPrimary) + w.Announce(host)
	case asReplica:
		primary := d.topo.initialPrimary
		if cur, err := d.Primary(ctx); err == nil {
			primary = cur.Reach()
		}
		if n.Answers(primary) {
			primary = ""
		}
		content = ValkeyConf(&d.cfg, &inside, dockerValkeyPort, primary)
	default:
		content = ValkeyConf(&d.cfg, &inside, dockerValkeyPort, "")
	}
	if !n.Watches() && n.Announce == "" {
		// (with --net-proxy valkeyConf announced the node's proxy)
		content += "replica-announce-ip " + host + "\n"
	}
	content = strings.Replace(content, "bind 127.0.0.1\n", "bind 0.0.0.0\n", 1)
	if err := writeFile(filepath.Join(n.Dir, "node.conf"), content); err != nil {
		return err
	}
	if d.cfg.FakeTime {
		return d.topo.WriteOffset(n, "+0")
	}
	return nil
}

func apiCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// CollectLogs copies every node's log (written into its bind-mounted
// directory) into dst as <name>.log.
func (d *Docker) CollectLogs(dst string) error { return d.q.CollectLogs(dst) }

// dropConn forgets the admin connection to a node that went down.
func (d *Docker) dropConn(addr string) {
	if !d.consensus() {
		d.topo.adm.drop(addr)
	}
}

// Down removes every container and network labelled with this run's id, found
// through the API rather than from memory so that a half-finished Up is
// cleaned too, then checks that none is left.
func (d *Docker) Down() error {
	d.topo.adm.close()
	d.proxies.close()
	if d.svc != nil {
		d.svc.Close()
	}
	if d.api == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := make(client.Filters).Add("label", dockerLabelRun+"="+d.runID)
	var errs []error
	cs, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list containers of %s: %w", d.runID, err)
	}
	// One at a time: Docker 20.10 can leak an endpoint count when containers
	// attached to the same networks are removed concurrently, and a network
	// with a phantom endpoint cannot be removed until the daemon restarts.
	for _, c := range cs.Items {
		if _, err := d.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", containerNames([]container.Summary{c}), err))
		}
	}
	ns, err := d.api.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return fmt.Errorf("list networks of %s: %w", d.runID, err)
	}
	for _, n := range ns.Items {
		if _, err := d.api.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		}
	}
	for _, n := range d.Nodes() {
		d.update(n.Name, func(x *Node) { x.PID, x.Killed, x.Paused = 0, true, false })
	}
	d.mu.Lock()
	d.ids, d.homes, d.partitioned, d.isolated = map[string]string{}, nil, map[string]bool{}, map[string]bool{}
	d.mu.Unlock()
	return errors.Join(errs...)
}

// Close releases the API client (after Down).
func (d *Docker) Close() error {
	if d.api == nil {
		return nil
	}
	return d.api.Close()
}
