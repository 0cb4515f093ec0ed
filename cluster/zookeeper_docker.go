package cluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The zookeeper topology on the Docker runtime: each member in a container
// of the locally built lockjepsen/zookeeper image (Debian's ZooKeeper jars
// on the host's JRE, FROM scratch), on the home networks every Docker run
// has, so that the leader can be cut off from the other members and from
// the clients (Isolate). Leader, readiness and logs are ZKLocal's code (the
// four-letter word srvr), asked over the members' container addresses.

const (
	dockerZKImageRepo   = "lockjepsen/zookeeper"
	dockerZKClientPort  = 2181
	dockerZKQuorumPort  = 2888
	dockerZKElectPort   = 3888
	dockerLabelZKVer    = "org.lockjepsen.zookeeper-version"
	dockerZKJava        = "/usr/local/bin/java"
	dockerZKDataDir     = dockerData + "/data"
	dockerZKConfig      = dockerData + "/zoo.cfg"
	dockerZKImageAdvice = "run 'make images' (scripts/build-images.sh builds it from Debian's zookeeper and the JRE that runs it; make setup installs both)"
)

// DockerZKImage is the ZooKeeper image a run uses: $LOCKJEPSEN_ZK_IMAGE,
// else lockjepsen/zookeeper:latest (what `make images` tags when zookeeper
// is installed).
func DockerZKImage() string {
	if s := os.Getenv("LOCKJEPSEN_ZK_IMAGE"); s != "" {
		return s
	}
	return dockerZKImageRepo + ":latest"
}

// layoutZK lays out the members zk-0..M-1; their addresses and quorum lines
// are known once Up has made the networks.
func (d *Docker) layoutZK() {
	d.image = DockerZKImage()
	d.zk = &ZKLocal{cfg: d.cfg, procs: map[string]*Proc{}, fourLWait: 500 * time.Millisecond}
	for _, n := range (zkDeployment{}).Layout(d.cfg) {
		n.Dir = filepath.Join(d.cfg.Dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		d.zk.nodes = append(d.zk.nodes, n)
	}
	d.set, d.q = &d.zk.nodeSet, d.zk
}

// zkQuorum records each member's quorum line: its home address, ports 2888
// (followers to the leader) and 3888 (leader election).
func (d *Docker) zkQuorum() {
	d.zk.quorum = nil
	for _, n := range d.Nodes() {
		host, _, _ := net.SplitHostPort(n.Addr)
		d.zk.quorum = append(d.zk.quorum, host+":"+strconv.Itoa(dockerZKQuorumPort)+":"+strconv.Itoa(dockerZKElectPort))
	}
}

// writeZKConfig writes a member's zoo.cfg and myid into its bind-mounted
// directory: the local runtime's settings, every port on every interface of
// the container, the data dir in /data (a restarted container rejoins with
// its snapshot and log).
func (d *Docker) writeZKConfig(n Node) error {
	i := d.index(n.Name)
	if err := os.MkdirAll(filepath.Join(n.Dir, "data"), 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(n.Dir, "data", "myid"), strconv.Itoa(i+1)+"\n"); err != nil {
		return err
	}
	return writeFile(filepath.Join(n.Dir, "zoo.cfg"), zooCfg(dockerZKDataDir, strconv.Itoa(dockerZKClientPort), "", d.zk.quorum))
}

// zkCommand is the member's command line: the local runtime's JVM flags,
// the jars at the paths the image holds them (Debian's, as on the host),
// the log in the bind mount.
func (d *Docker) zkCommand(n Node) []string {
	return append([]string{dockerZKJava},
		zkJVMArgs(dockerData, dockerData+"/"+n.Name+".log", strings.Join(zkJars, ":"), dockerZKConfig)...)
}

// zkVersion is what the members' srvr said once ready, else the version
// the image was labelled with at build time.
func (d *Docker) zkVersion() string {
	d.zk.mu.Lock()
	v := d.zk.version
	d.zk.mu.Unlock()
	if v == "" {
		v = d.imageLabel(dockerLabelZKVer)
	}
	if v == "" {
		return "ZooKeeper (version unknown)"
	}
	return "ZooKeeper " + v
}

// awaitZK waits until a restarted member serves.
func (d *Docker) awaitZK(ctx context.Context, name string) error { return d.zk.awaitServe(ctx, name) }
