package cluster

import (
	"errors"
	"fmt"
	"sort"

	"github.com/moby/moby/client"
)

// Partitioner is a runtime that can cut one node off from the others. It is
// optional: processes on one loopback interface cannot be partitioned, so only
// the Docker runtime implements it, and a fault that needs it checks for it.
type Partitioner interface {
	// Partition cuts the node off from every other node (Valkey and Sentinel)
	// while the host (the clients) still reaches it.
	Partition(name string) error
	// Heal reconnects it, with the addresses it had.
	Heal(name string) error
	// Partitioned lists the nodes cut off now.
	Partitioned() []string
}

// Isolator is a runtime that can cut one node off from everything, the
// clients on the host included: what a Redlock node on the far side of a
// partition looks like to the clients. Only the Docker runtime implements it;
// Partitioner's Heal and Partitioned cover it too.
type Isolator interface {
	Partitioner
	// Isolate disconnects the node from every network it is on; packets to
	// it are dropped (no reset), as in a real partition.
	Isolate(name string) error
}

var _ Isolator = (*Docker)(nil)

// Partition disconnects node name from every peer's home network and every
// peer from name's home network. The host stays on every network, so the
// clients keep reaching both sides: a split brain, not an outage.
func (d *Docker) Partition(name string) error {
	i := d.index(name)
	if i < 0 {
		return fmt.Errorf("no node named %q", name)
	}
	if !d.meshed() {
		return fmt.Errorf("the redlock topology's nodes never talk to each other, so there is no link between them to cut: Isolate cuts %s off from the clients", name)
	}
	d.mu.Lock()
	if d.partitioned[name] || d.isolated[name] {
		d.mu.Unlock()
		return fmt.Errorf("%s is already partitioned", name)
	}
	d.partitioned[name] = true
	d.mu.Unlock()
	ctx, cancel := apiCtx()
	defer cancel()
	var errs []error
	d.eachLink(name, func(h dockerNet, id string, _ int) {
		if _, err := d.api.NetworkDisconnect(ctx, h.id, client.NetworkDisconnectOptions{Container: id, Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("disconnect %s from %s: %w", shortID(id), h.name, err))
		}
	})
	return errors.Join(errs...)
}

// Isolate disconnects node name from every network it is on: its home
// network (where the host reaches it) and, on a meshed topology, every peer's.
// Neither the clients nor the other nodes reach it until Heal; its process
// runs on and keeps its data.
func (d *Docker) Isolate(name string) error {
	if d.index(name) < 0 {
		return fmt.Errorf("no node named %q", name)
	}
	d.mu.Lock()
	if d.partitioned[name] || d.isolated[name] {
		d.mu.Unlock()
		return fmt.Errorf("%s is already partitioned", name)
	}
	d.isolated[name] = true
	d.mu.Unlock()
	ctx, cancel := apiCtx()
	defer cancel()
	var errs []error
	d.eachOwnLink(name, func(h dockerNet, id string, _ int) {
		if _, err := d.api.NetworkDisconnect(ctx, h.id, client.NetworkDisconnectOptions{Container: id, Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("disconnect %s from %s: %w", shortID(id), h.name, err))
		}
	})
	return errors.Join(errs...)
}

// eachOwnLink calls f for every network node name itself is attached to:
// its home network, and on a meshed topology every peer's.
func (d *Docker) eachOwnLink(name string, f func(h dockerNet, id string, k int)) {
	i := d.index(name)
	d.mu.Lock()
	homes := append([]dockerNet(nil), d.homes...)
	id := d.ids[name]
	d.mu.Unlock()
	for j, h := range homes {
		if j == i || d.meshed() {
			f(h, id, i)
		}
	}
}

// Heal reconnects every link Partition (or Isolate) cut, each endpoint with
// its old address so that configs and Sentinel's records stay valid.
func (d *Docker) Heal(name string) error {
	if d.index(name) < 0 {
		return fmt.Errorf("no node named %q", name)
	}
	d.mu.Lock()
	was, iso := d.partitioned[name], d.isolated[name]
	delete(d.partitioned, name)
	delete(d.isolated, name)
	d.mu.Unlock()
	if iso {
		ctx, cancel := apiCtx()
		defer cancel()
		var errs []error
		d.eachOwnLink(name, func(h dockerNet, id string, k int) {
			if err := d.join(ctx, h, id, k); err != nil {
				errs = append(errs, fmt.Errorf("reconnect %s to %s: %w", shortID(id), h.name, err))
			}
		})
		return errors.Join(errs...)
	}
	if !was {
		return nil
	}
	ctx, cancel := apiCtx()
	defer cancel()
	var errs []error
	d.eachLink(name, func(h dockerNet, id string, k int) {
		if err := d.join(ctx, h, id, k); err != nil {
			errs = append(errs, fmt.Errorf("reconnect %s to %s: %w", shortID(id), h.name, err))
		}
	})
	return errors.Join(errs...)
}

// Partitioned lists the nodes cut off now (Partition or Isolate), sorted.
func (d *Docker) Partitioned() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for n := range d.partitioned {
		out = append(out, n)
	}
	for n := range d.isolated {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// eachLink calls f for every (network, container, node index) endpoint that
// joins node name to another node: name on the others' home networks, the
// others on name's.
func (d *Docker) eachLink(name string, f func(h dockerNet, id string, k int)) {
	i := d.index(name)
	nodes := d.Nodes()
	d.mu.Lock()
	homes := append([]dockerNet(nil), d.homes...)
	ids := map[string]string{}
	for k, v := range d.ids {
		ids[k] = v
	}
	d.mu.Unlock()
	for j, n := range nodes {
		if j == i || j >= len(homes) {
			continue
		}
		f(homes[j], ids[name], i)
		f(homes[i], ids[n.Name], j)
	}
}

// HealAll reconnects every partitioned node (the runner's final heal).
func (d *Docker) HealAll() error {
	var errs []error
	for _, n := range d.Partitioned() {
		errs = append(errs, d.Heal(n))
	}
	return errors.Join(errs...)
}
