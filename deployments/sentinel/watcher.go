package sentinel

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
)

// Role is the Sentinels' kind of node: the runtimes start one from the
// spec below as they start a Valkey server, and leave it out of what only
// servers do (cluster.Node.Watches).
const Role cluster.Role = "sentinel"

func init() {
	cluster.RegisterWatcher(Role, cluster.WatcherKind{
		// valkey-sentinel is valkey-server under another name; --sentinel
		// starts either in Sentinel mode.
		Program: "valkey-sentinel", Args: []string{"--sentinel"},
		Port:     26379,
		Conf:     conf,
		Announce: func(host string) string { return "sentinel announce-ip " + host + "\n" },
		Primary:  primaryAt,

		OrderSwitch:  orderSwitch,
		Unpromotable: unpromotable,
	})
}

// orderSwitch orders the coordinated switch from Sentinel w. Sentinel marked
// the paused replicas down (paused past down-after) and answers NOGOODSLAVE
// until its next pings find them healthy: ask again until it takes the
// order. (Asked once, 10 of 10 bench runs got NOGOODSLAVE and switched
// nothing.)
func orderSwitch(ctx context.Context, c cluster.Runtime, w cluster.Node) (string, error) {
	order := []string{"SENTINEL", "FAILOVER", cluster.MasterName, "COORDINATED"}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := c.Command(ctx, w.Name, order...)
		if err == nil {
			return strings.Join(order, " "), nil
		}
		if !strings.Contains(err.Error(), "NOGOODSLAVE") || time.Now().After(deadline) {
			return "", fmt.Errorf("%s on %s: %w", strings.Join(order, " "), w.Name, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unpromotable counts the replicas Sentinel w lists with priority 0. Its
// SENTINEL REPLICAS reply comes flattened to field and value lines; the
// field is slave-priority in Sentinel's reply, replica-priority in newer
// spellings.
func unpromotable(ctx context.Context, c cluster.Runtime, w cluster.Node) (int, error) {
	out, err := c.Command(ctx, w.Name, "SENTINEL", "REPLICAS", cluster.MasterName)
	if err != nil {
		return 0, err
	}
	return zeroPriorities(out), nil
}

func zeroPriorities(reply string) int {
	f := strings.Split(reply, "\n")
	n := 0
	for i := 0; i+1 < len(f); i += 2 {
		if (f[i] == "slave-priority" || f[i] == "replica-priority") && f[i+1] == "0" {
			n++
		}
	}
	return n
}

// conf renders a fresh Sentinel config. Sentinels rewrite their config
// files as they learn, so every run writes a new one.
//
// down-after 1 s, the default here, has a failure of Sentinel's own: about
// a second after some failovers Sentinel flags the new primary down and
// fails over again, with no fault. Traced in Valkey 9.1's src/sentinel.c:
// the switch (sentinelResetPrimaryAndChangeAddress, then
// sentinelResetPrimary) starts the new primary's pending-ping clock
// (act_ping_time = mstime()) but keeps the link's last_reconn_time, and
// sentinelReconnectInstance connects to the new address only
// sentinel_ping_period (1 s) after its last attempt on the old one. When
// that attempt was recent (a dead primary is retried every second), the
// first PING leaves after down-after has run out, and
// sentinelCheckSubjectivelyDown flags +sdown in the same tick, before its
// PONG. The reset keeps the other Sentinels' is-master-down answers about
// the dead primary (SENTINEL_RESET_NO_SENTINELS; their 5 s expiry runs
// only in sentinelAskPrimaryStateToOtherSentinels, which returns while
// the primary is up), so sentinelCheckObjectivelyDown counts them for the
// new one: +odown with quorum at once, and the reset's
// failover_start_time = 0 lets the failover start. The Sentinel logs of
// results/without-failover/coordinated-sentinel/trial-3/ show the +sdown
// 1.0-1.07 s after each +switch-master; scripts/sentinel-second-failover.sh
// counts those flags and the second failovers, `lockjepsen bench cluster`
// the second failovers. A down-after above a second and a tick (2 s) has
// no such window.
func conf(c *cluster.Config, n *cluster.Node, port int, primary string) string {
	h, p, _ := strings.Cut(primary, ":")
	m := cluster.MasterName
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\nbind 127.0.0.1\nprotected-mode no\n", port)
	fmt.Fprintf(&b, "dir %s\nlogfile %s\npidfile \"\"\ndaemonize no\n", n.Dir, n.LogFile)
	fmt.Fprintf(&b, "sentinel monitor %s %s %s %d\n", m, h, p, c.Quorum)
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", m, c.DownAfter.Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", m, c.FailoverTimeout.Milliseconds())
	fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", m)
	return b.String()
}

// primaryAt is the address the Sentinel at addr believes is the primary.
func primaryAt(ctx context.Context, l *cluster.Local, addr string) (string, error) {
	r, err := l.Do(ctx, addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", cluster.MasterName)
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", addr, err)
	}
	parts, err := r.AsStrSlice()
	if err != nil || len(parts) != 2 {
		return "", fmt.Errorf("sentinel %s has no primary for %s", addr, cluster.MasterName)
	}
	return net.JoinHostPort(parts[0], parts[1]), nil
}

// listAt is SENTINEL REPLICAS or SENTINEL SENTINELS from the Sentinel at
// addr, each entry as its field map.
func listAt(ctx context.Context, l *cluster.Local, addr, what string) ([]map[string]string, error) {
	r, err := l.Do(ctx, addr, "SENTINEL", what, cluster.MasterName)
	if err != nil {
		return nil, err
	}
	out, err := cluster.FieldMaps(r)
	if err != nil {
		return nil, fmt.Errorf("SENTINEL %s from %s: %w", what, addr, err)
	}
	return out, nil
}
