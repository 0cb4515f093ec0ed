package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

func init() {
	register(command{name: "cluster", summary: "start, inspect, break and stop a local Valkey 9 + Sentinel topology", run: runCluster,
		subcommands: []string{"up", "status", "kill-primary", "down"}})
}

const defaultClusterDir = ".lockjepsen/cluster"

func runCluster(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return subUsage(args, `usage: lockjepsen cluster <up|status|kill-primary|down> [flags]

  up            start 1 primary, --replicas replicas and --sentinels Sentinels on loopback;
                returns once all replicas are linked and all Sentinels agree
  status        each node's role, address, pid and link, as the nodes report it
  kill-primary  SIGKILL the primary, time the failover, restart the old primary as a replica
  down          stop every node of the cluster
`)
	}
	switch args[0] {
	case "up":
		return clusterUp(args[1:])
	case "status":
		return clusterStatus(args[1:])
	case "kill-primary":
		return clusterKillPrimary(args[1:])
	case "down":
		return clusterDown(args[1:])
	}
	return fail("cluster: unknown subcommand %q (want up, status, kill-primary or down)", args[0])
}

// clusterFlags registers the topology flags of `cluster up`, with the same
// typed knobs (and so the same checks and messages) as `run`: the command
// starts the default deployment, whose own flags (the number of Sentinels)
// it declares itself.
func clusterFlags(fs *flag.FlagSet, c *cluster.Config) {
	fs.Var(knob.Int{N: &c.Replicas, Min: 0, Max: 8}, "replicas", "number of replicas")
	if d, err := cluster.Lookup(cluster.DefaultTopology()); err == nil {
		if fo, ok := d.(cluster.FlagOwner); ok {
			fo.Flags(fs, c)
		}
	}
	fs.Var(knob.Duration{D: &c.DownAfter, Min: 100 * time.Millisecond, Why: "below that Sentinels flag healthy nodes down"}, "down-after", "Sentinel down-after-milliseconds (below ~200ms healthy nodes get flagged down)")
	fs.Var(knob.Duration{D: &c.FailoverTimeout, Min: time.Second, Why: "below 1s failovers abort on Valkey 9.1"}, "failover-timeout", "Sentinel failover-timeout (500ms aborts failovers; 1s-3s works)")
	fs.Func("min-replicas", "min-replicas-to-write:min-replicas-max-lag (seconds) on every node, e.g. 1:10, as run takes it", func(v string) error {
		m, err := knob.ParseMinReplicas(v)
		c.MinReplicasToWrite, c.MinReplicasMaxLag = m.Count, m.LagS
		return err
	})
	fs.Var(knob.Int{N: &c.MinReplicasToWrite, Min: 0, Max: 8}, "min-replicas-to-write", hiddenPrefix+"min-replicas (count part)")
	fs.Var(knob.Int{N: &c.MinReplicasMaxLag, Min: 0, Max: 3600}, "min-replicas-max-lag", hiddenPrefix+"min-replicas (lag part)")
	fs.BoolVar(&c.AppendOnly, "appendonly", false, "turn on the AOF on every node")
	fs.Var(knob.Choice{S: &c.AppendFsync, Among: knob.FsyncPolicies}, "appendfsync", "AOF fsync policy: always, everysec or no")
	fs.Var(knob.Int{N: &c.BasePort, Min: 0, Max: 65535}, "base-port", "first port of a consecutive range (default: free ports chosen by the kernel)")
	fs.BoolVar(&c.FakeTime, "fake-time", false, "start nodes under libfaketime so their wall clocks can be moved")
}

func clusterUp(args []string) int {
	fs := newFlagSet("cluster up", "cluster up [flags]")
	cfg := cluster.Defaults()
	clusterFlags(fs, &cfg)
	fs.StringVar(&cfg.Dir, "dir", defaultClusterDir, "run directory for node configs, data and logs")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail("cluster up: unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.Validate(); err != nil {
		return fail("cluster up: %v", err)
	}
	// Before Valkey is looked for: a --dir no one can create was found by
	// NewLocal, after the binaries' version probe.
	if err := runfolder.CanCreate(cfg.Dir); err != nil {
		return fail("cluster up: --dir %s cannot be created: %v", cfg.Dir, err)
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return fail("%v", err)
	}
	if old, err := cluster.LoadLocal(cfg.Dir, bins); err == nil {
		for _, n := range old.Nodes() {
			if n.PID != 0 && processAlive(n.PID) {
				return fail("a cluster is already running in %s (%s pid %d): 'lockjepsen cluster down --dir %s' first, or use another --dir", cfg.Dir, n.Name, n.PID, cfg.Dir)
			}
		}
	}
	cfg.Detached = true
	l, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		return fail("cluster up: %v", err)
	}
	fmt.Printf("cluster ready in %v (Valkey %s), run directory %s\n\n", time.Since(start).Round(time.Millisecond), l.Version(), l.Config().Dir)
	printStatus(l)
	_, port, err := net.SplitHostPort(l.Nodes()[0].Addr)
	if err != nil {
		port = l.Nodes()[0].Addr
	}
	fmt.Printf("\ntry: valkey-cli -p %s SET lock:{demo} mytoken NX PX 30000\n", port)
	fmt.Printf("     lockjepsen cluster kill-primary --dir %s ; lockjepsen cluster down --dir %s\n", cfg.Dir, cfg.Dir)
	return exitValid
}

func loadCluster(name string, args []string) (*cluster.Local, int, bool) {
	fs := newFlagSet("cluster "+name, "cluster "+name+" [--dir DIR]")
	dir := fs.String("dir", defaultClusterDir, "run directory given to 'cluster up'")
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	// The folder is read before Valkey is looked for, so that a wrong
	// --dir is named as such (it was "valkey-server not found" without one).
	if _, err := os.Stat(filepath.Join(*dir, cluster.StateFile)); err != nil {
		return nil, fail("cluster %s: --dir %q holds no cluster (no %s): start one with 'lockjepsen cluster up --dir DIR', or give its --dir", name, *dir, cluster.StateFile), false
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return nil, fail("%v", err), false
	}
	l, err := cluster.LoadLocal(*dir, bins)
	if err != nil {
		return nil, fail("%v", err), false
	}
	return l, 0, true
}

func clusterStatus(args []string) int {
	l, code, ok := loadCluster("status", args)
	if !ok {
		return code
	}
	printStatus(l)
	return exitValid
}

func printStatus(l *cluster.Local) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tPID\tVERSION\tDETAIL")
	for _, s := range l.Status(ctx) {
		pid := "-"
		if s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, roleWord(s.Role), s.Addr, pid, l.Version(), s.Detail)
	}
	tw.Flush()
}

func roleWord(r string) string {
	switch r {
	case "master":
		return "primary"
	case "slave":
		return "replica"
	}
	return r
}

func clusterKillPrimary(args []string) int {
	l, code, ok := loadCluster("kill-primary", args)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := l.Primary(ctx)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Printf("SIGKILL %s (%s, pid %d), the primary\n", p.Name, p.Addr, p.PID)
	start := time.Now()
	if err := l.Kill(p.Name); err != nil {
		return fail("%v", err)
	}
	np, err := l.WaitFailover(ctx, p.Name)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Printf("Sentinels promoted %s (%s) after %v\n", np.Name, np.Addr, time.Since(start).Round(time.Millisecond))
	if err := l.Restart(ctx, p.Name, cluster.AsReplica); err != nil {
		return fail("restart %s: %v", p.Name, err)
	}
	if err := l.WaitReady(ctx); err != nil {
		return fail("%v", err)
	}
	fmt.Printf("%s restarted as a replica of %s; cluster ready again after %v\n\n", p.Name, np.Name, time.Since(start).Round(time.Millisecond))
	printStatus(l)
	return exitValid
}

func clusterDown(args []string) int {
	l, code, ok := loadCluster("down", args)
	if !ok {
		return code
	}
	if err := l.Down(); err != nil {
		return fail("cluster down: %v", err)
	}
	fmt.Println("cluster stopped")
	return exitValid
}

func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
