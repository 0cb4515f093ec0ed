package zookeeper

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// ZooKeeper on the Docker runtime: each member in a container of the
// locally built lockjepsen/zookeeper image (Debian's ZooKeeper jars on the
// host's JRE, FROM scratch), on the home networks every Docker run has, so
// that the leader can be cut off from the other members and from the
// clients (Isolate). Leader, readiness and logs are Local's code (the
// four-letter word srvr), asked over the members' container addresses.

const (
	imageRepo    = "lockjepsen/zookeeper"
	clientPort   = 2181
	quorumPort   = 2888
	electPort    = 3888
	versionLabel = "org.lockjepsen.zookeeper-version"
	dockerJava   = "/usr/local/bin/java"
)

// DockerImage is the ZooKeeper image a run uses: $LOCKJEPSEN_ZK_IMAGE, else
// lockjepsen/zookeeper:latest (what `make images` tags when zookeeper is
// installed).
func DockerImage() string {
	if s := os.Getenv("LOCKJEPSEN_ZK_IMAGE"); s != "" {
		return s
	}
	return imageRepo + ":latest"
}

// DockerService makes the Docker runtime's ZooKeeper members
// (cluster.DockerServed).
func (deployment) DockerService(cfg cluster.Config, set *cluster.NodeSet) cluster.DockerService {
	return &dockerService{Local: newMembers(cfg, set)}
}

// dockerService is Local's member table and queries over the containers.
type dockerService struct{ *Local }

var _ cluster.DockerService = (*dockerService)(nil)

func (s *dockerService) Image() string { return DockerImage() }
func (s *dockerService) ImageAdvice() string {
	return "run 'make images' (scripts/build-images.sh builds it from Debian's zookeeper and the JRE that runs it; make setup installs both)"
}
func (s *dockerService) ClientPort() int { return clientPort }
func (s *dockerService) Close()          {}

// AwaitAnswer waits until a restarted member serves.
func (s *dockerService) AwaitAnswer(ctx context.Context, name string) error {
	return s.awaitServe(ctx, name)
}
func (s *dockerService) Exec(ctx context.Context, name string, args ...string) (string, error) {
	return s.Command(ctx, name, args...)
}

// Placed records each member's quorum line: its home address, ports 2888
// (followers to the leader) and 3888 (leader election).
func (s *dockerService) Placed(nodes []cluster.Node) {
	s.quorum = nil
	for _, n := range nodes {
		host, _, _ := net.SplitHostPort(n.Addr)
		s.quorum = append(s.quorum, host+":"+strconv.Itoa(quorumPort)+":"+strconv.Itoa(electPort))
	}
}

// Prepare writes a member's zoo.cfg and myid into its bind-mounted
// directory: the local runtime's settings, every port on every interface of
// the container, the data dir in the bind mount (a restarted container
// rejoins with its snapshot and log).
func (s *dockerService) Prepare(n cluster.Node) error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "data"), 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(n.Dir, "data", "myid"), strconv.Itoa(s.Index(n.Name)+1)+"\n"); err != nil {
		return err
	}
	return writeFile(filepath.Join(n.Dir, "zoo.cfg"), zooCfg(cluster.DockerData+"/data", strconv.Itoa(clientPort), "", s.quorum))
}

// Argv is the member's command line: the local runtime's JVM flags, the
// jars at the paths the image holds them (Debian's, as on the host), the log
// in the bind mount.
func (s *dockerService) Argv(n cluster.Node) []string {
	data := cluster.DockerData
	return append([]string{dockerJava},
		zkJVMArgs(data, data+"/"+n.Name+".log", strings.Join(zkJars, ":"), data+"/zoo.cfg")...)
}

// Version is what the members' srvr said once ready, else the version the
// image was labelled with at build time.
func (s *dockerService) Version(label func(string) string) string {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	if v == "" {
		v = label(versionLabel)
	}
	if v == "" {
		return "ZooKeeper (version unknown)"
	}
	return fmt.Sprintf("ZooKeeper %s", v)
}
