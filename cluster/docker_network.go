package cluster

// The docker runtime's networks: each node's home network, carved from a pool
// no other network on the machine uses, and the joins that mesh them.

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

type dockerNet struct {
	name, id string
	prefix   netip.Prefix
}

// addrOn is node k's address on network h: .1 is the gateway (the host), nodes
// follow from .2 in node order, so a reconnect restores the same address.
func addrOn(h dockerNet, k int) netip.Addr {
	a := h.prefix.Addr()
	for i := 0; i < k+2; i++ {
		a = a.Next()
	}
	return a
}

// createNetworks makes one internal bridge network per node, each on a /27 of
// the pool. Subnets are tried from an offset drawn from the run id, so parallel
// runs rarely contend; Docker rejects overlapping subnets and the next is tried.
func (d *Docker) createNetworks(ctx context.Context, n int) error {
	pool, err := dockerPool()
	if err != nil {
		return err
	}
	total := 1 << (dockerSubnetBits - pool.Bits())
	start := int(hashString(d.runID) % uint32(total))
	nodes := d.Nodes()
	next := 0
	for i := 0; i < n; i++ {
		created := false
		for ; next < total && !created; next++ {
			sub := subnetAt(pool, (start+next)%total)
			gw := sub.Addr().Next()
			name := d.runID + "-" + nodes[i].Name
			r, err := d.api.NetworkCreate(ctx, name, client.NetworkCreateOptions{
				Driver:   "bridge",
				Internal: true,
				IPAM:     &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: sub, Gateway: gw}}},
				Labels:   d.labels(nodes[i].Name),
			})
			if err != nil {
				if strings.Contains(err.Error(), "overlap") {
					continue
				}
				return fmt.Errorf("create network %s (%s): %w", name, sub, err)
			}
			d.mu.Lock()
			d.homes = append(d.homes, dockerNet{name: name, id: r.ID, prefix: sub})
			d.mu.Unlock()
			created = true
		}
		if !created {
			return fmt.Errorf("no free /%d left in the docker address pool %s: remove unused networks (docker network prune) or set LOCKJEPSEN_DOCKER_POOL", dockerSubnetBits, pool)
		}
	}
	return nil
}

func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func subnetAt(pool netip.Prefix, i int) netip.Prefix {
	b := pool.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i) << (32 - dockerSubnetBits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), dockerSubnetBits)
}

// dockerPool returns the address pool and refuses one that overlaps a route of
// the host other than Docker's own bridges: containers would shadow real hosts.
func dockerPool() (netip.Prefix, error) {
	s := os.Getenv("LOCKJEPSEN_DOCKER_POOL")
	if s == "" {
		s = defaultDockerPool
	}
	pool, err := netip.ParsePrefix(s)
	if err != nil || !pool.Addr().Is4() || pool.Bits() > dockerSubnetBits-1 {
		return pool, fmt.Errorf("LOCKJEPSEN_DOCKER_POOL %q: want an IPv4 prefix of /%d or larger, e.g. %s", s, dockerSubnetBits-1, defaultDockerPool)
	}
	pool = pool.Masked()
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return pool, nil // not Linux-like; Docker's own overlap check remains
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 || strings.HasPrefix(f[0], "br-") || strings.HasPrefix(f[0], "docker") || f[1] == "00000000" {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		// /proc/net/route holds addresses in host (little-endian) byte order.
		a := netip.AddrFrom4([4]byte{byte(dst), byte(dst >> 8), byte(dst >> 16), byte(dst >> 24)})
		ones := 0
		for m := uint32(mask); m != 0; m &= m - 1 {
			ones++
		}
		if r := netip.PrefixFrom(a, ones); r.Overlaps(pool) {
			return pool, fmt.Errorf("the docker address pool %s overlaps the host route %s on %s: set LOCKJEPSEN_DOCKER_POOL to a private range this host does not use", pool, r, f[0])
		}
	}
	return pool, nil
}

func (d *Docker) join(ctx context.Context, h dockerNet, id string, k int) error {
	_, err := d.api.NetworkConnect(ctx, h.id, client.NetworkConnectOptions{
		Container:      id,
		EndpointConfig: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: addrOn(h, k)}},
	})
	return err
}
