package cluster

import (
	"context"
	"fmt"
)

// WatcherKind is a kind of node a Valkey deployment runs beside its servers
// that watches them rather than serving (Node.Watches): a program of the
// Valkey installation started with a config of its own. The deployment
// that has one declares it (RegisterWatcher, from its folder's init), so
// that the runtimes start it as they start a server without knowing what
// it is.
type WatcherKind struct {
	// Program is its binary in the installation (the local runtime's Valkey
	// directory, the image's /usr/local/bin), and Args what follows the
	// config file's path on its command line. The local runtime starts the
	// server binary in its place when the installation lacks it, which is
	// why Args must say the mode.
	Program string
	Args    []string
	// Port is the port it listens on in a container.
	Port int
	// Conf renders a fresh config: n as the node sees itself (its Dir and
	// LogFile inside a container), port the one it listens on, primary the
	// first primary's address.
	Conf func(c *Config, n *Node, port int, primary string) string
	// Announce is the config line that makes it hand out host, its address
	// on its network, from inside a container.
	Announce func(host string) string
	// Primary asks the node at addr which address it names primary, for
	// `cluster status`.
	Primary func(ctx context.Context, l *Local, addr string) (string, error)

	// What the faults ask of a watcher when the deployment's failover
	// goes through it; nil where its kind cannot.

	// OrderSwitch orders from watcher w a coordinated switch to a replica
	// (writes paused until it caught up) and says how, as the history's
	// line puts it; it returns once the order is taken.
	OrderSwitch func(ctx context.Context, c Runtime, w Node) (how string, err error)
	// Unpromotable counts the replicas watcher w will not promote (their
	// priority 0, as it has learned it).
	Unpromotable func(ctx context.Context, c Runtime, w Node) (int, error)
}

// Watcher is the kind of watching node n is, ok false for a server.
func (n Node) Watcher() (w WatcherKind, ok bool) {
	w, ok = watcherKinds[n.Kind]
	return w, ok
}

var watcherKinds = map[Role]WatcherKind{}

// RegisterWatcher declares a kind of watching node; a deployment's Layout
// then places nodes of that Kind.
func RegisterWatcher(kind Role, w WatcherKind) {
	if _, dup := watcherKinds[kind]; dup {
		panic(fmt.Sprintf("cluster: watcher kind %q registered twice", kind))
	}
	watcherKinds[kind] = w
}

// Watches reports whether the node watches the servers rather than serving:
// it holds no data, no TIME of its own to move, no proxy in front, and is
// left out of whatever only the servers take part in.
func (n Node) Watches() bool {
	_, ok := n.Watcher()
	return ok
}

func watcherAddrs(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		if n.Watches() {
			out = append(out, n.Addr)
		}
	}
	return out
}
