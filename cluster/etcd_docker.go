package cluster

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The etcd topology on the Docker runtime: each member in a container of the
// locally built lockjepsen/etcd image (Debian's etcd binary, FROM scratch),
// on the home networks every Docker run has, so that a member can be cut off
// from the other members (Partition) while the clients on the host still
// reach it. Leader, readiness and logs are EtcdLocal's code, asked over the
// members' container addresses.

const (
	dockerEtcdImageRepo  = "lockjepsen/etcd"
	dockerEtcdClientPort = 2379
	dockerEtcdPeerPort   = 2380
	dockerLabelEtcdVer   = "org.lockjepsen.etcd-version"
)

// DockerEtcdImage is the etcd image a run uses: $LOCKJEPSEN_ETCD_IMAGE, else
// lockjepsen/etcd:latest (what `make images` tags when etcd is installed).
func DockerEtcdImage() string {
	if s := os.Getenv("LOCKJEPSEN_ETCD_IMAGE"); s != "" {
		return s
	}
	return dockerEtcdImageRepo + ":latest"
}

// layoutEtcd lays out the members etcd-0..M-1; their addresses and peer URLs
// are known once Up has made the networks.
func (d *Docker) layoutEtcd() {
	d.image = DockerEtcdImage()
	d.etcd = &EtcdLocal{cfg: d.cfg, procs: map[string]*Proc{}, clients: map[string]*clientv3.Client{}}
	for _, n := range (etcdDeployment{}).Layout(d.cfg) {
		n.Dir = filepath.Join(d.cfg.Dir, n.Name)
		n.LogFile = filepath.Join(n.Dir, n.Name+".log")
		d.etcd.nodes = append(d.etcd.nodes, n)
	}
	d.set, d.q = &d.etcd.nodeSet, d.etcd
}

// etcdPeers records each member's peer URL: its home address, port 2380.
func (d *Docker) etcdPeers() {
	d.etcd.peers = nil
	for _, n := range d.Nodes() {
		host, _, _ := strings.Cut(n.Addr, ":")
		d.etcd.peers = append(d.etcd.peers, "http://"+netip.AddrPortFrom(netip.MustParseAddr(host), dockerEtcdPeerPort).String())
	}
}

// etcdCommand is the member's command line: the local runtime's flags, with
// the listeners on every interface of the container, the advertised URLs on
// its home address, and the data dir and log in the bind-mounted /data (so
// that a restarted container rejoins with its data, and the log is kept).
func (d *Docker) etcdCommand(n Node) []string {
	i := d.index(n.Name)
	client := "http://" + n.Addr
	peer := d.etcd.peers[i]
	return []string{
		"/usr/local/bin/etcd",
		"--name", n.Name, "--data-dir", dockerData + "/data",
		"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdClientPort), "--advertise-client-urls", client,
		"--listen-peer-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdPeerPort), "--initial-advertise-peer-urls", peer,
		"--initial-cluster", d.etcd.initialCluster(), "--initial-cluster-state", "new",
		"--initial-cluster-token", "lockjepsen",
		"--heartbeat-interval", strconv.Itoa(int(EtcdHeartbeat.Milliseconds())),
		"--election-timeout", strconv.Itoa(int(EtcdElectionTimeout.Milliseconds())),
		"--logger", "zap", "--log-outputs", dockerData + "/" + n.Name + ".log",
	}
}

// etcdVersion is the version the image was labelled with at build time,
// asked of the daemon once.
func (d *Docker) etcdVersion() string {
	d.mu.Lock()
	v := d.etcd.version
	d.mu.Unlock()
	if v == "" {
		v = d.imageLabel(dockerLabelEtcdVer)
	}
	if v == "" {
		return "etcd (version unknown)"
	}
	d.mu.Lock()
	d.etcd.version = v
	d.mu.Unlock()
	return "etcd " + v
}

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
