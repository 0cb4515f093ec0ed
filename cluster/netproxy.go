package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
}

// NetShaper is a runtime with a proxy in front of each Valkey node
// (--net-proxy): the network faults put toxics on it.
type NetShaper interface {
	// AddToxic puts t on the proxy in front of node: on the connections
	// open now and on those made while it stays.
	AddToxic(node string, t Toxic) error
	// ClearToxics removes every toxic from node's proxy ("" every node's).
	ClearToxics(node string) error
}

var _ NetShaper = (*Local)(nil)

// netProxies is the set of proxies of one run.
type netProxies struct {
	mu     sync.Mutex
	byNode map[string]*toxiproxy.Proxy
}

// startNetProxies starts one proxy per data node, in front of its direct
// address, on a port the kernel picks; it returns the proxies' addresses by
// node. On error nothing stays listening.
func startNetProxies(nodes []Node) (*netProxies, map[string]string, error) {
	// No HTTP API and no log: the proxies live and die with the run.
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := &netProxies{byNode: map[string]*toxiproxy.Proxy{}}
	addrs := map[string]string{}
	for _, n := range nodes {
		if n.Kind == RoleSentinel {
			continue
		}
		px := toxiproxy.NewProxy(srv, n.Name, "127.0.0.1:0", n.Addr)
		if err := px.Start(); err != nil {
			p.close()
			return nil, nil, fmt.Errorf("start the --net-proxy proxy in front of %s: %w", n.Name, err)
		}
		p.byNode[n.Name], addrs[n.Name] = px, px.Listen
	}
	return p, addrs, nil
}

// close stops every proxy: its listener and every connection through it.
// Safe to call twice.
func (p *netProxies) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, px := range p.byNode {
		px.Toxics.ResetToxics(context.Background())
		px.Stop()
		delete(p.byNode, name)
	}
}

func (p *netProxies) proxy(node string) (*toxiproxy.Proxy, error) {
	if p == nil {
		return nil, errNoNetProxy
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	px, ok := p.byNode[node]
	if !ok {
		return nil, fmt.Errorf("%s has no --net-proxy proxy (a Sentinel, or the run has ended)", node)
	}
	return px, nil
}

var errNoNetProxy = errors.New("this run has no proxies in front of its nodes: add --net-proxy")

// AddToxic puts a toxic on the proxy in front of node.
func (l *Local) AddToxic(node string, t Toxic) error {
	px, err := l.proxies.proxy(node)
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
	if _, err := px.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		return fmt.Errorf("add the %s toxic on %s's proxy: %w", t.Type, node, err)
	}
	return nil
}

// ClearToxics removes every toxic from node's proxy, or from every proxy.
func (l *Local) ClearToxics(node string) error {
	if l.proxies == nil {
		return errNoNetProxy
	}
	names := []string{node}
	if node == "" {
		names = names[:0]
		l.proxies.mu.Lock()
		for n := range l.proxies.byNode {
			names = append(names, n)
		}
		l.proxies.mu.Unlock()
		sort.Strings(names)
	}
	for _, n := range names {
		px, err := l.proxies.proxy(n)
		if err != nil {
			return err
		}
		px.Toxics.ResetToxics(context.Background())
	}
	return nil
}

// proxyListeners lists the addresses the proxies listen on while the
// cluster is up (the nodes' announced addresses), which a test checks are
// closed after Down.
func (l *Local) proxyListeners() []string {
	var out []string
	for _, n := range l.Nodes() {
		if n.Announce != "" && n.Announce != n.Addr {
			out = append(out, n.Announce)
		}
	}
	return out
}
