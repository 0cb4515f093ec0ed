// Package standalone is the single primary both seed documents start from:
// one primary and --replicas replicas as Valkey processes on loopback, no
// Sentinel, the clients at one service address (a forwarder in lockjepsen's
// own process); its faults (faults.go: the operator's promotion and the
// forced switch) and scenarios (scenarios.go).
package standalone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
)

func init() { cluster.Register(4, deployment{}) }

// Topology is the single-instance lock both seed documents start
// from ("SET key token NX EX ttl is an atomic best-effort lock on a single
// Redis"): one primary and optional replicas, no Sentinel, no automatic
// failover. Clients reach the primary at one service address, as they would
// through a DNS name or a virtual IP; an operator who promotes a replica
// moves that address (Repoint), and the clients' open connections drop.
const Topology = "standalone"

// errNoFailover answers WaitFailover: nothing promotes a replica on its own.
var errNoFailover = errors.New("the standalone topology has no automatic failover (no Sentinel): use promote-replica, the operator's manual promotion")

type deployment struct{ cluster.ValkeyBase }

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "one primary and --replicas replicas, no Sentinel, no automatic failover; clients reach the primary at one service address"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "one primary, LOCKJEPSEN_ADDR"
}
func (deployment) Banner(c cluster.Config, version string) string {
	return fmt.Sprintf("cluster: standalone, 1 primary and %d replica(s), no Sentinel, no automatic failover; clients reach the primary at one service address (Valkey %s)", c.Replicas, version)
}
func (deployment) Settled() string {
	return "waiting for one primary with its replicas in sync"
}

// Endpoints is the service address on the runner's runtime; a runtime made
// without one (NewLocal, `cluster up`) hands out the first primary directly.
func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	if s, ok := rt.(*standaloneLocal); ok && s.front != nil {
		return endpoint.One(s.front.addr())
	}
	for _, n := range rt.Nodes() {
		if n.Kind == cluster.RolePrimary {
			return endpoint.One(n.Addr)
		}
	}
	return endpoint.Set{}
}
func (deployment) Protocol() endpoint.Protocol { return endpoint.Valkey }
func (deployment) Offers(need string) bool {
	return need == cluster.NeedPrimary || need == Topology || need == cluster.NeedAny || need == cluster.NeedReplicas || need == cluster.NeedNetProxy
}
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	if k.DelayedRestart > 0 {
		return fmt.Errorf("--delayed-restart is a redlock-topology knob (a standalone primary comes back at once): add --topology redlock")
	}
	return nil
}
func (deployment) Validate(c *cluster.Config) error {
	if c.Runtime != "" && c.Runtime != cluster.RuntimeLocal {
		return fmt.Errorf("--topology standalone runs on --runtime local only in this version (its service address is a forwarder in lockjepsen's own process)")
	}
	return nil
}
func (deployment) Layout(c cluster.Config) []cluster.Node {
	return cluster.LayoutValkey(c, 1, c.Replicas)
}
func (deployment) NewLocal(c cluster.Config, bins cluster.Binaries) (cluster.Runtime, error) {
	l, err := cluster.NewLocal(c, bins)
	if err != nil {
		return nil, err
	}
	return &standaloneLocal{Local: l}, nil
}
func (deployment) Start(ctx context.Context, l *cluster.Local) error { return l.UpReplicated(ctx) }

// Comparisons is the standalone row of the comparison of lock services
// (Compared): the native lock on the one primary, fenced by INCR; its
// failover is the operator's promotion (promote-replica), its clock jump
// the primary's (clock-bump).
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{{Name: "standalone-fence", Recipe: "native", Fence: "read-write",
		Note:     "one primary and 2 replicas, no Sentinel, fence read-write from INCR; the failover is an operator's promotion (--topology standalone --fence read-write)",
		StandIns: map[string][]string{"clock-jump": {"clock-bump"}}}}
}

// readyOnce: one live node answers as primary and every other live node
// replicates it with its link up.
func (deployment) ReadyOnce(ctx context.Context, l *cluster.Local) error {
	p, err := l.PrimaryByRole(ctx)
	if err != nil {
		return err
	}
	for _, n := range l.ValkeyNodes() {
		if n.Name == p.Name || n.PID == 0 || n.Paused {
			continue
		}
		ri, err := l.Info(ctx, n.Addr, "replication")
		if err != nil {
			return err
		}
		if ri["role"] != "slave" || !p.Answers(ri["master_host"]+":"+ri["master_port"]) || ri["master_link_status"] != "up" {
			return fmt.Errorf("%s does not replicate %s with its link up yet (role %s, link %s)", n.Name, p.Name, ri["role"], ri["master_link_status"])
		}
	}
	return nil
}

// primary is the one live node that answers as a primary: nobody else names
// it, so its own word is all there is.
func (deployment) FindPrimary(ctx context.Context, l *cluster.Local) (cluster.Node, error) {
	return l.PrimaryByRole(ctx)
}
func (deployment) AwaitFailover(context.Context, *cluster.Local, string) (cluster.Node, error) {
	return cluster.Node{}, errNoFailover
}

// standaloneLocal is the local runtime with the service address in front.
type standaloneLocal struct {
	*cluster.Local
	front *frontDoor
}

var (
	_ cluster.Runtime   = (*standaloneLocal)(nil)
	_ cluster.Repointer = (*standaloneLocal)(nil)
)

// Up starts the nodes, then opens the service address on the first primary.
func (s *standaloneLocal) Up(ctx context.Context) error {
	if err := s.Local.Up(ctx); err != nil {
		return err
	}
	p, err := s.Primary(ctx)
	if err != nil {
		return err
	}
	f, err := openFrontDoor(s.clientAddr(p))
	if err != nil {
		s.Local.Down()
		return err
	}
	s.front = f
	return nil
}

// Down closes the service address, then stops the nodes.
func (s *standaloneLocal) Down() error {
	if s.front != nil {
		s.front.close()
	}
	return s.Local.Down()
}

func (s *standaloneLocal) Repoint(node string) error {
	n, ok := s.Node(node)
	if !ok {
		return fmt.Errorf("no node %s", node)
	}
	if s.front == nil {
		return fmt.Errorf("no service address to repoint: the runtime is not up")
	}
	s.front.repoint(s.clientAddr(n))
	return nil
}

// clientAddr is where the service address forwards to reach n: its client
// proxy with --net-proxy (the announced one carries replication), else n.
func (s *standaloneLocal) clientAddr(n cluster.Node) string {
	if c, ok := s.DialMap()[n.Reach()]; ok {
		return c
	}
	return n.Addr
}

// frontDoor forwards each connection on a loopback port to the current
// target. It is the service address, not a network fault: it adds nothing
// to a connection but a copy in each direction.
// dialTimeout bounds the forwarder's dial of the primary, as the
// harness's own commands are bounded.
const dialTimeout = 2 * time.Second

type frontDoor struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	closed bool
}

func openFrontDoor(target string) (*frontDoor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("service address: %w", err)
	}
	f := &frontDoor{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go f.serve()
	return f, nil
}

func (f *frontDoor) addr() string { return f.ln.Addr().String() }

func (f *frontDoor) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		go f.forward(c)
	}
}

func (f *frontDoor) forward(c net.Conn) {
	f.mu.Lock()
	target := f.target
	f.mu.Unlock()
	u, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		c.Close() // the client sees what a dead primary gives it
		return
	}
	if !f.track(c, u) {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, c)
		u.Close()
		close(done)
	}()
	_, _ = io.Copy(c, u)
	c.Close()
	<-done
	f.untrack(c, u)
}

// track records a connection pair so that repoint can drop it; false (and
// both closed) when the door closed meanwhile.
func (f *frontDoor) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *frontDoor) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
	}
}

// repoint moves the address and drops every open connection.
func (f *frontDoor) repoint(target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = target
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}

func (f *frontDoor) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.repoint("")
}

// ClientTestLayout: the primary alone.
func (deployment) ClientTestLayout(c *cluster.Config) { c.Replicas = 0 }

func (deployment) ClientTestHooks(_ context.Context, rt cluster.Runtime, _ endpoint.Set) cluster.ClientTestHooks {
	return cluster.ClientTestHooks{Against: fmt.Sprintf("Valkey %s (1 primary, no Sentinel)", rt.Version())}
}
