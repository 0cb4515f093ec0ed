package valkeycluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// SlotMove is one legacy move of a key's slot on a Valkey Cluster to the
// next primary by name (the cluster spec's live resharding steps): Open
// (SETSLOT IMPORTING on the target, MIGRATING on the source), MigrateKeys
// (MIGRATE ... KEYS in batches, as valkey-cli does), Close (what is left,
// then SETSLOT NODE on the target, the source and every other primary).
// While it is open the source serves the keys it still has and answers ASK
// for those it has not. The migration faults and client-test's slot cases
// both move slots this way.
type SlotMove struct {
	Slot     int
	Key      string
	Src, Dst cluster.Node
	// Primaries are every primary serving slots: each is told the new
	// owner when the move closes.
	Primaries    []cluster.Node
	IDs          map[string]string // node name -> cluster node ID
	srcID, dstID string
}

func (m SlotMove) String() string {
	return fmt.Sprintf("slot %d (%s) from %s to %s", m.Slot, m.Key, m.Src.Name, m.Dst.Name)
}

// PlanSlotMove reads, from key's primary, who serves what, and picks the
// next primary by name as the target.
func PlanSlotMove(ctx context.Context, c cluster.Runtime, key string) (SlotMove, error) {
	sc, ok := c.(cluster.Sharded)
	if !ok {
		return SlotMove{}, fmt.Errorf("this runtime has no shards: a slot move needs --topology cluster")
	}
	sh, err := sc.Shard(ctx, key)
	if err != nil {
		return SlotMove{}, fmt.Errorf("the shard of %s: %w", key, err)
	}
	out, err := c.Command(ctx, sh.Primary.Name, "CLUSTER", "NODES")
	if err != nil {
		return SlotMove{}, fmt.Errorf("CLUSTER NODES on %s: %w", sh.Primary.Name, err)
	}
	m := SlotMove{Slot: sh.Slot, Key: key, Src: sh.Primary, IDs: map[string]string{}}
	for _, v := range ParseClusterNodes(out) {
		if !v.Primary || v.Failing || len(v.Slots) == 0 {
			continue
		}
		for _, n := range c.Nodes() {
			if n.Addr == v.Addr && !n.Watches() {
				m.Primaries = append(m.Primaries, n)
				m.IDs[n.Name] = v.ID
			}
		}
	}
	slices.SortFunc(m.Primaries, func(a, b cluster.Node) int { return strings.Compare(a.Name, b.Name) })
	i := slices.IndexFunc(m.Primaries, func(n cluster.Node) bool { return n.Name == sh.Primary.Name })
	if i < 0 || len(m.Primaries) < 2 {
		return m, fmt.Errorf("%s sees %d healthy primaries serving slots (itself among them: %v): a move needs another", sh.Primary.Name, len(m.Primaries), i >= 0)
	}
	m.Dst = m.Primaries[(i+1)%len(m.Primaries)]
	m.srcID, m.dstID = m.IDs[m.Src.Name], m.IDs[m.Dst.Name]
	return m, nil
}

// Open opens the slot on both sides, the target first: a source that
// answered ASK before the target was importing would send the client to a
// node that answers MOVED back.
func (m SlotMove) Open(ctx context.Context, c cluster.Runtime) error {
	slot := strconv.Itoa(m.Slot)
	if _, err := c.Command(ctx, m.Dst.Name, "CLUSTER", "SETSLOT", slot, "IMPORTING", m.srcID); err != nil {
		return fmt.Errorf("SETSLOT %s IMPORTING on %s: %w", slot, m.Dst.Name, err)
	}
	if _, err := c.Command(ctx, m.Src.Name, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.dstID); err != nil {
		_, _ = c.Command(context.WithoutCancel(ctx), m.Dst.Name, "CLUSTER", "SETSLOT", slot, "STABLE")
		return fmt.Errorf("SETSLOT %s MIGRATING on %s: %w", slot, m.Src.Name, err)
	}
	return nil
}

// MigrateKeys moves every key of the slot from the source to the target;
// moved, when not nil, hears of each batch (the keys and MIGRATE's reply).
// A lock and its fence counter share the slot, so they move in one MIGRATE.
func (m SlotMove) MigrateKeys(ctx context.Context, c cluster.Runtime, moved func(keys []string, reply string)) (int, error) {
	host, port, _ := strings.Cut(m.Dst.Addr, ":")
	n := 0
	for range 100 {
		out, err := c.Command(ctx, m.Src.Name, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.Slot), "100")
		if err != nil {
			return n, fmt.Errorf("GETKEYSINSLOT %d on %s: %w", m.Slot, m.Src.Name, err)
		}
		keys := strings.Fields(out)
		if len(keys) == 0 {
			return n, nil
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)
		r, err := c.Command(ctx, m.Src.Name, args...)
		if err != nil {
			return n, fmt.Errorf("MIGRATE %v from %s to %s: %w", keys, m.Src.Name, m.Dst.Name, err)
		}
		n += len(keys)
		if moved != nil {
			moved(keys, r)
		}
	}
	return n, fmt.Errorf("slot %d on %s still has keys after 100 MIGRATE rounds", m.Slot, m.Src.Name)
}

// Close moves what the source still holds, then assigns the slot to the
// target: the target first (it stops needing ASKING), the source next (it
// answers MOVED from then on), then every other primary.
func (m SlotMove) Close(ctx context.Context, c cluster.Runtime, moved func(keys []string, reply string)) (int, error) {
	n, err := m.MigrateKeys(ctx, c, moved)
	if err != nil {
		return n, err
	}
	order := []cluster.Node{m.Dst, m.Src}
	for _, p := range m.Primaries {
		if p.Name != m.Dst.Name && p.Name != m.Src.Name {
			order = append(order, p)
		}
	}
	for _, p := range order {
		if _, err := c.Command(ctx, p.Name, "CLUSTER", "SETSLOT", strconv.Itoa(m.Slot), "NODE", m.dstID); err != nil {
			return n, fmt.Errorf("SETSLOT %d NODE %s on %s: %w", m.Slot, m.Dst.Name, p.Name, err)
		}
	}
	return n, nil
}

// DstID is the target's cluster node ID (CLUSTER MIGRATESLOTS names it).
func (m SlotMove) DstID() string { return m.dstID }
