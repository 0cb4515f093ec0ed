package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Network faults without netem (the kernel here has no netem qdisc): with
// --net-proxy every Valkey node gets a TCP proxy in lockjepsen's own
// process, toxiproxy's proxy used as a library (no HTTP API), listening on
// 127.0.0.1. The node announces the proxy's address (replica-announce-ip
// and -port) and the Sentinels monitor the first primary at its proxy, so
// every address Sentinel hands out, to clients and to the replicas it
// repoints, is a proxy: clients, Sentinels and replication all go through
// it, as they would all cross the node's network interface. The runner's
// own admin connections (INFO, CLIENT KILL, the fault steps) use the
// node's direct address, so that a fault never slows the harness.
//
// Each node has a second proxy, announced nowhere, for the lock clients:
// the runner hands them a dial map (Endpoints.DialMap) from every node's
// announced address to its client proxy, so that what Sentinel hands out
// is dialed there. The announced proxy then carries replication and
// Sentinel alone, and a toxic on it slows the replication link without
// slowing the clients (net-slow-replication). The other network faults put
// their toxic on both, so that clients, Sentinels and replicas alike see it.

// Toxic is one toxiproxy toxic on a node's proxy (toxiproxy's names:
// latency, timeout, reset_peer, bandwidth, slow_close, ...).
type Toxic struct {
	Name string
	Type string
	// Stream is "downstream" (node to client: replies, the replication
	// stream) or "upstream" (client to node: commands).
	Stream string
	// Toxicity is the share of connections the toxic applies to, 0..1;
	// toxiproxy draws it per connection when the toxic reaches it.
	Toxicity float64
	// Attributes are the toxic's own (latency: latency and jitter in ms;
	// timeout and reset_peer: timeout in ms).
	Attributes map[string]int64
	// ReplicationOnly puts the toxic on the announced proxy alone (the
	// replicas' and the Sentinels' path), not on the clients' proxy.
	ReplicationOnly bool
}

// NetShaper is a runtime with a proxy in front of each Valkey node
// (--net-proxy): the network faults put toxics on it.
type NetShaper interface {
	// AddToxic puts t on the proxy in front of node: on the connections
	// open now and on those made while it stays.
	AddToxic(node string, t Toxic) error
	// ClearToxics removes every toxic from node's proxy ("" every node's).
	ClearToxics(node string) error
	// DropReplicationLinks closes every connection through node's
	// announced (replication) proxy and listens again on the same address
	// with no toxic: for links whose far end has gone (a replica
	// promoted, another repointed), whose bytes a latency toxic still
	// holds. Removing the toxic would flush them to the gone peer, and
	// toxiproxy gives each held chunk 5 s (a forced switch inside a 1 s
	// link waited 211 s so); the proxy is replaced instead.
	DropReplicationLinks(node string) error
}

var (
	_ NetShaper = (*Local)(nil)
	_ NetShaper = (*Docker)(nil)
)

// netProxies is the set of proxies of one run.
type netProxies struct {
	srv    *toxiproxy.ApiServer // what a replaced proxy is made with
	mu     sync.Mutex
	byNode map[string]nodeProxies
}

// nodeProxies are a node's two proxies: repl is announced (replication,
// Sentinel), client is the lock clients' (through the dial map).
type nodeProxies struct{ repl, client *toxiproxy.Proxy }

func (n nodeProxies) each(f func(*toxiproxy.Proxy)) { f(n.repl); f(n.client) }

// startNetProxies starts two proxies per data node, both in front of its
// direct address, on ports the kernel picks, listening on the host
// listenOn names for the node (127.0.0.1 on the local runtime; on docker
// the host's address on the node's home network, which the node's peers
// reach and a partition cuts); it returns the announced (replication)
// proxy's address by node. On error nothing stays listening.
func startNetProxies(nodes []Node, listenOn func(Node) string) (p *netProxies, announced map[string]string, err error) {
	// No HTTP API and no log: the proxies live and die with the run.
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p = &netProxies{byNode: map[string]nodeProxies{}, srv: srv}
	announced = map[string]string{}
	start := func(name, host, upstream string) (*toxiproxy.Proxy, error) {
		px := toxiproxy.NewProxy(srv, name, net.JoinHostPort(host, "0"), upstream)
		if err := px.Start(); err != nil {
			return nil, fmt.Errorf("start the --net-proxy proxy %s: %w", name, err)
		}
		return px, nil
	}
	for _, n := range nodes {
		if n.Watches() {
			continue
		}
		var np nodeProxies
		host := listenOn(n)
		if np.repl, err = start(n.Name, host, n.Addr); err == nil {
			if np.client, err = start(n.Name+"-clients", host, n.Addr); err != nil {
				np.repl.Stop()
			}
		}
		if err != nil {
			p.close()
			return nil, nil, err
		}
		p.byNode[n.Name] = np
		announced[n.Name] = np.repl.Listen
	}
	return p, announced, nil
}

// dialMap maps each node's announced address (its replication proxy) to its
// client proxy: Endpoints.DialMap. Nil without proxies.
func (p *netProxies) dialMap() map[string]string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]string{}
	for _, np := range p.byNode {
		m[np.repl.Listen] = np.client.Listen
	}
	return m
}

// close stops every proxy: its listener and every connection through it.
// Safe to call twice.
func (p *netProxies) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, np := range p.byNode {
		np.each(func(px *toxiproxy.Proxy) {
			px.Toxics.ResetToxics(context.Background())
			px.Stop()
		})
		delete(p.byNode, name)
	}
}

func (p *netProxies) proxy(node string) (nodeProxies, error) {
	if p == nil {
		return nodeProxies{}, errNoNetProxy
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	np, ok := p.byNode[node]
	if !ok {
		return nodeProxies{}, fmt.Errorf("%s has no --net-proxy proxy (it watches the servers, or the run has ended)", node)
	}
	return np, nil
}

var errNoNetProxy = errors.New("this run has no proxies in front of its nodes: add --net-proxy")

// AddToxic puts a toxic on the proxies in front of node: both, or with
// ReplicationOnly the announced one alone.
func (l *Local) AddToxic(node string, t Toxic) error { return l.proxies.addToxic(node, t) }

// ClearToxics removes every toxic from node's proxies, or from every proxy.
func (l *Local) ClearToxics(node string) error { return l.proxies.clearToxics(node) }

// AddToxic puts a toxic on the proxies in front of node (--net-proxy on
// docker: the proxies run in lockjepsen's process on the host).
func (d *Docker) AddToxic(node string, t Toxic) error { return d.proxies.addToxic(node, t) }

// ClearToxics removes every toxic from node's proxies, or from every proxy.
func (d *Docker) ClearToxics(node string) error { return d.proxies.clearToxics(node) }

// DropReplicationLinks replaces node's replication proxy by one with no
// toxic on the same address (dropReplicationLinks).
func (l *Local) DropReplicationLinks(node string) error { return l.proxies.dropReplicationLinks(node) }

// DropReplicationLinks replaces node's replication proxy by one with no
// toxic on the same address (dropReplicationLinks).
func (d *Docker) DropReplicationLinks(node string) error { return d.proxies.dropReplicationLinks(node) }

// dropReplicationLinks replaces node's replication proxy by a fresh one on
// the same address. The old one is stopped and left with its toxics: its
// links' held chunks have nowhere to go, and removing a toxic from them
// blocks (toxiproxy's RemoveToxic flushes each with a 5 s timeout; closing
// the connections first did not end the links before it ran, 369 s). Their
// goroutines stay blocked until the process ends, a few per switch.
func (p *netProxies) dropReplicationLinks(node string) error {
	np, err := p.proxy(node)
	if err != nil {
		return err
	}
	old := np.repl
	old.Stop()
	px := toxiproxy.NewProxy(p.srv, old.Name, old.Listen, old.Upstream)
	if err := px.Start(); err != nil {
		return fmt.Errorf("listen again on %s's replication proxy %s: %w", node, old.Listen, err)
	}
	p.mu.Lock()
	np.repl = px
	p.byNode[node] = np
	p.mu.Unlock()
	return nil
}

// DialMap maps every node's announced address to its client proxy (nil
// without --net-proxy).
func (d *Docker) DialMap() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proxies.dialMap()
}

func (p *netProxies) addToxic(node string, t Toxic) error {
	np, err := p.proxy(node)
	if err != nil {
		return err
	}
	// The library takes a toxic as the JSON its HTTP API would receive.
	body, err := json.Marshal(map[string]any{
		"name": t.Name, "type": t.Type, "stream": t.Stream, "toxicity": t.Toxicity, "attributes": t.Attributes,
	})
	if err != nil {
		return fmt.Errorf("encode the %s toxic: %w", t.Type, err)
	}
	targets := []*toxiproxy.Proxy{np.repl, np.client}
	if t.ReplicationOnly {
		targets = targets[:1]
	}
	for _, px := range targets {
		if _, err := px.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
			return fmt.Errorf("add the %s toxic on %s's proxy %s: %w", t.Type, node, px.Name, err)
		}
	}
	return nil
}

func (p *netProxies) clearToxics(node string) error {
	if p == nil {
		return errNoNetProxy
	}
	names := []string{node}
	if node == "" {
		names = names[:0]
		p.mu.Lock()
		for n := range p.byNode {
			names = append(names, n)
		}
		p.mu.Unlock()
		sort.Strings(names)
	}
	for _, n := range names {
		np, err := p.proxy(n)
		if err != nil {
			return err
		}
		np.each(func(px *toxiproxy.Proxy) { px.Toxics.ResetToxics(context.Background()) })
	}
	return nil
}

// DialMap maps every node's announced address to its client proxy (nil
// without --net-proxy): the lock clients dial through it.
func (l *Local) DialMap() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.proxies.dialMap()
}

// proxyListeners lists the addresses the proxies listen on while the
// cluster is up (the nodes' announced addresses and their client proxies),
// which a test checks are closed after Down.
func (l *Local) proxyListeners() []string {
	var out []string
	for _, n := range l.Nodes() {
		if n.Announce != "" && n.Announce != n.Addr {
			out = append(out, n.Announce)
		}
	}
	for _, c := range l.DialMap() {
		out = append(out, c)
	}
	return out
}
