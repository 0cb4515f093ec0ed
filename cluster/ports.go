package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Node ports are drawn below the kernel's ephemeral range. A port handed out
// is free from the moment allocatePorts closes its listener until the node
// binds it, seconds later for a Sentinel; a port the kernel picks, for an
// outgoing connection's source or for a listener on port 0, comes from the
// ephemeral range, and a CI run makes thousands of both: the run's own
// --net-proxy proxies, the resource servers, the clients' connections, the
// browser tests. Once, in a fresh-clone CI run, a proxy of one test took the
// port another test had handed its Sentinel, and that run's readiness check
// found a Valkey data node behind the Sentinel's address ("unknown command
// 'SENTINEL'"). Below the range only allocatePorts hands ports out, and the
// claims keep two lockjepsen processes apart.
const (
	privatePortLow = 10000
	// clusterBusOffset: a Valkey Cluster node's bus listens on port+10000.
	clusterBusOffset = 10000
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768 on
// Linux unless configured otherwise).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > privatePortLow {
				return lo
			}
		}
	}
	return 32768
}

// allocatePorts returns n ports: base..base+n-1 after checking that each is
// free, or with base 0 free ports below the ephemeral range, each claimed.
func allocatePorts(base, n int) ([]int, error) {
	if base != 0 {
		return fixedPorts(base, n)
	}
	return pickPorts(n, 0)
}

// allocateClusterPorts is allocatePorts for Valkey Cluster nodes, whose bus
// port (+10000) must be free too (and is claimed with the node's).
func allocateClusterPorts(base, n int) ([]int, error) {
	if base != 0 {
		ports, err := fixedPorts(base, n)
		if err != nil {
			return nil, err
		}
		if _, err := fixedPorts(base+clusterBusOffset, n); err != nil {
			return nil, fmt.Errorf("cluster bus ports: %w", err)
		}
		return ports, nil
	}
	return pickPorts(n, clusterBusOffset)
}

func fixedPorts(base, n int) ([]int, error) {
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
		if err != nil {
			return nil, fmt.Errorf("port %d (in --base-port range %d-%d) is in use: pick another --base-port, or omit it to use free ports", base+i, base, base+n-1)
		}
		l.Close()
		ports = append(ports, base+i)
	}
	return ports, nil
}

// pickPorts draws n free, unclaimed ports below the ephemeral range, each
// with port+offset free and unclaimed too when offset > 0. A port is claimed
// while its listener is open, so no other process's pickPorts can take it at
// the same moment.
func pickPorts(n, offset int) ([]int, error) {
	lo, hi := privatePortLow, ephemeralLow()-offset
	if hi-lo < 100*n {
		return nil, fmt.Errorf("too few ports between %d and the ephemeral range's start %d: lower ip_local_port_range's start, or pass --base-port", lo, hi+offset)
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	listen := func(p int) bool {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ls = append(ls, l)
		return true
	}
	dir := portClaimDir()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 2000 {
			return nil, fmt.Errorf("no %d free ports between %d and %d after %d tries: pass --base-port", n, lo, hi+offset, tries)
		}
		p := lo + rand.IntN(hi-lo)
		if !listen(p) || offset > 0 && !listen(p+offset) {
			continue
		}
		now := time.Now()
		if !claimPort(dir, p, now) || offset > 0 && !claimPort(dir, p+offset, now) {
			continue
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// FreePorts returns n ports for a deployment outside this package, as the
// built-in ones get theirs: base..base+n-1 after checking that each is free
// (--base-port), or with base 0 free ports below the ephemeral range.
func FreePorts(base, n int) ([]int, error) { return allocatePorts(base, n) }
