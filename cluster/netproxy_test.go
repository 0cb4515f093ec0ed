package cluster

import (
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"net"
	"testing"
	"time"
)

// TestNetProxyInFrontOfEveryNode runs a real Sentinel topology with
// --net-proxy: Sentinel names the proxies (before and after a failover), a
// toxic on a proxy slows what crosses it and nothing else, one on the
// replication path alone leaves the clients' proxy fast, and Down closes
// every proxy's listener.
func TestNetProxyInFrontOfEveryNode(t *testing.T) {
	testslot.Parallel(t)
	l := startCluster(t, func(c *Config) { c.NetProxy = true })
	ctx := ctxT(t, 60*time.Second)
	listeners := l.proxyListeners()
	if len(listeners) != 2*len(l.ValkeyNodes()) {
		t.Fatalf("%d proxy listeners for %d Valkey nodes, want two each: %v", len(listeners), len(l.ValkeyNodes()), listeners)
	}
	dm := l.cfg.Deployment().Endpoints(l).DialMap
	for _, n := range l.ValkeyNodes() {
		if c := dm[n.Announce]; c == "" || c == n.Announce || c == n.Addr {
			t.Errorf("the clients' dial map sends %s's announced %s to %q, want its own client proxy", n.Name, n.Announce, c)
		}
	}
	// WaitFailover returns once a majority of Sentinels name the new
	// primary; the rest learn it from their peers' hello messages a moment
	// later (one still named the old primary's proxy in a CI run, 2026-12-05).
	// Each Sentinel must name the proxy within 15 s.
	sentinelsName := func(want Node) {
		t.Helper()
		for _, s := range l.WatcherAddrs() {
			deadline := time.Now().Add(15 * time.Second)
			got, err := sentinelPrimary(ctx, l, s)
			for (err != nil || got != want.Announce) && time.Now().Before(deadline) {
				time.Sleep(PollEvery)
				got, err = sentinelPrimary(ctx, l, s)
			}
			if err != nil || got != want.Announce {
				t.Fatalf("Sentinel %s names %q (%v) after 15 s, want %s's proxy %s (direct %s)", s, got, err, want.Name, want.Announce, want.Addr)
			}
			reps, err := sentinelList(ctx, l.adm, s, "REPLICAS")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if n, ok := l.NodeByAddr(r["ip"] + ":" + r["port"]); !ok || n.Announce != r["ip"]+":"+r["port"] {
					t.Errorf("Sentinel %s lists replica %s:%s, which is no node's proxy", s, r["ip"], r["port"])
				}
			}
		}
	}
	p, err := l.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sentinelsName(p)
	if got := mustDo(t, l, p.Announce, "SET", "through-the-proxy", "1"); got != "OK" {
		t.Fatalf("a write through %s's proxy: %q", p.Name, got)
	}

	// A latency toxic slows the proxy's replies, not the direct address.
	pingTakes := func(addr string) time.Duration {
		t.Helper()
		start := time.Now()
		mustDo(t, l, addr, "PING")
		return time.Since(start)
	}
	pingTakes(p.Announce) // the admin's connection through the proxy opens before the toxic
	if err := l.AddToxic(p.Name, Toxic{Name: "slow", Type: "latency", Stream: "downstream", Toxicity: 1,
		Attributes: map[string]int64{"latency": 300}}); err != nil {
		t.Fatal(err)
	}
	if d := pingTakes(p.Announce); d < 250*time.Millisecond {
		t.Errorf("PING through the slowed proxy took %v, want at least 250ms", d)
	}
	if d := pingTakes(p.Addr); d > 200*time.Millisecond {
		t.Errorf("PING at the direct address took %v: the toxic reached the harness's own path", d)
	}
	if err := l.ClearToxics(""); err != nil {
		t.Fatal(err)
	}
	if d := pingTakes(p.Announce); d > 200*time.Millisecond {
		t.Errorf("PING through the healed proxy took %v", d)
	}

	// On the replication path alone (net-slow-replication): the announced
	// proxy is slow, the clients' is not.
	clientPath := dm[p.Announce]
	pingTakes(clientPath)
	if err := l.AddToxic(p.Name, Toxic{Name: "slow-repl", Type: "latency", Stream: "downstream", Toxicity: 1,
		Attributes: map[string]int64{"latency": 300}, ReplicationOnly: true}); err != nil {
		t.Fatal(err)
	}
	if d := pingTakes(p.Announce); d < 250*time.Millisecond {
		t.Errorf("PING through the slowed replication proxy took %v, want at least 250ms", d)
	}
	if d := pingTakes(clientPath); d > 200*time.Millisecond {
		t.Errorf("PING through the clients' proxy took %v: a replication-only toxic reached the clients", d)
	}
	if err := l.ClearToxics(""); err != nil {
		t.Fatal(err)
	}

	// A failover: Sentinel promotes a replica at its proxy, and the old
	// primary rejoins as a replica of that proxy.
	if err := l.Kill(p.Name); err != nil {
		t.Fatal(err)
	}
	np, err := l.WaitFailover(ctx, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Restart(ctx, p.Name, AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	sentinelsName(np)
	inf, err := l.adm.info(ctx, p.Addr, "replication")
	if err != nil {
		t.Fatal(err)
	}
	if got := inf["master_host"] + ":" + inf["master_port"]; got != np.Announce {
		t.Errorf("%s rejoined as a replica of %s, want %s's proxy %s", p.Name, got, np.Name, np.Announce)
	}

	if err := l.Down(); err != nil {
		t.Fatal(err)
	}
	for _, a := range listeners {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("proxy listener %s still accepts connections after Down", a)
		}
	}
}
