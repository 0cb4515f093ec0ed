package etcd

import (
	"context"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// etcd on the Docker runtime: each member in a container of the locally
// built lockjepsen/etcd image (Debian's etcd binary, FROM scratch), on the
// home networks every Docker run has, so that a member can be cut off from
// the other members (Partition) while the clients on the host still reach
// it. Leader, readiness and logs are Local's code, asked over the members'
// container addresses.

const (
	imageRepo    = "lockjepsen/etcd"
	clientPort   = 2379
	peerPort     = 2380
	versionLabel = "org.lockjepsen.etcd-version"
)

// DockerImage is the etcd image a run uses: $LOCKJEPSEN_ETCD_IMAGE, else
// lockjepsen/etcd:latest (what `make images` tags when etcd is installed).
func DockerImage() string {
	if s := os.Getenv("LOCKJEPSEN_ETCD_IMAGE"); s != "" {
		return s
	}
	return imageRepo + ":latest"
}

// DockerService makes the Docker runtime's etcd members (cluster.DockerServed).
func (deployment) DockerService(cfg cluster.Config, set *cluster.NodeSet) cluster.DockerService {
	return &dockerService{Local: newMembers(cfg, set)}
}

// dockerService is Local's member table and queries over the containers.
type dockerService struct {
	*Local
}

var _ cluster.DockerService = (*dockerService)(nil)

func (s *dockerService) Image() string { return DockerImage() }
func (s *dockerService) ImageAdvice() string {
	return "run 'make setup-etcd images' (scripts/build-images.sh builds it from Debian's etcd-server)"
}
func (s *dockerService) ClientPort() int            { return clientPort }
func (s *dockerService) Prepare(cluster.Node) error { return nil }
func (s *dockerService) Close()                     { s.closeClients() }
func (s *dockerService) AwaitAnswer(ctx context.Context, name string) error {
	return s.awaitAnswer(ctx, name)
}
func (s *dockerService) Exec(ctx context.Context, name string, args ...string) (string, error) {
	return s.Command(ctx, name, args...)
}

// Placed records each member's peer URL: its home address, port 2380.
func (s *dockerService) Placed(nodes []cluster.Node) {
	s.peers = nil
	for _, n := range nodes {
		host, _, _ := strings.Cut(n.Addr, ":")
		s.peers = append(s.peers, "http://"+netip.AddrPortFrom(netip.MustParseAddr(host), peerPort).String())
	}
}

// Argv is the member's command line: the local runtime's flags, with the
// listeners on every interface of the container, the advertised URLs on its
// home address, and the data dir and log in the bind-mounted directory (so
// that a restarted container rejoins with its data, and the log is kept).
func (s *dockerService) Argv(n cluster.Node) []string {
	data := cluster.DockerData
	return []string{
		"/usr/local/bin/etcd",
		"--name", n.Name, "--data-dir", data + "/data",
		"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(clientPort), "--advertise-client-urls", "http://" + n.Addr,
		"--listen-peer-urls", "http://0.0.0.0:" + strconv.Itoa(peerPort), "--initial-advertise-peer-urls", s.peers[s.Index(n.Name)],
		"--initial-cluster", s.initialCluster(), "--initial-cluster-state", "new",
		"--initial-cluster-token", "lockjepsen",
		"--heartbeat-interval", strconv.Itoa(int(Heartbeat.Milliseconds())),
		"--election-timeout", strconv.Itoa(int(ElectionTimeout.Milliseconds())),
		"--logger", "zap", "--log-outputs", data + "/" + n.Name + ".log",
	}
}

// Version is the version the image was labelled with at build time, asked
// of the daemon until it answers.
func (s *dockerService) Version(label func(string) string) string {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	if v == "" {
		v = label(versionLabel)
	}
	if v == "" {
		return "etcd (version unknown)"
	}
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
	return "etcd " + v
}
