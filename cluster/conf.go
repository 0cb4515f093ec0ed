package cluster

import (
	"fmt"
	"strings"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ValkeyConf renders a node's config (a deployment outside this package
// adds lines of its own). replicaOf is "" for a primary.
func ValkeyConf(c *Config, n *Node, port int, replicaOf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\nbind 127.0.0.1\nprotected-mode no\n", port)
	fmt.Fprintf(&b, "dir %s\nlogfile %s\npidfile \"\"\ndaemonize no\n", n.Dir, n.LogFile)
	// No RDB snapshots: a restart without AOF must come back empty, as the
	// fast-restart lesson needs; AOF is the persistence knob under test.
	b.WriteString("save \"\"\n")
	fmt.Fprintf(&b, "appendonly %s\nappendfsync %s\n", yesno(c.AppendOnly), c.AppendFsync)
	fmt.Fprintf(&b, "min-replicas-to-write %d\nmin-replicas-max-lag %d\n", c.MinReplicasToWrite, c.MinReplicasMaxLag)
	// Diskless sync starts at once instead of after the default 5 s delay, so a
	// restarted node rejoins quickly.
	b.WriteString("repl-diskless-sync yes\nrepl-diskless-sync-delay 0\n")
	b.WriteString("enable-debug-command local\n")
	b.WriteString(maxMemoryConf(c))
	if old := c.OldNode(); old != "" {
		// Sentinel promotes the replica with the lowest priority: the old
		// build's node, so a failover lands the upgrade's weak spot.
		prio := 100
		if n.Name == old {
			prio = 1
		}
		fmt.Fprintf(&b, "replica-priority %d\n", prio)
	}
	if n.Announce != "" {
		// Sentinel learns a replica's address from the primary's INFO, which
		// carries what the replica announces: the proxy, so that clients and
		// a repointed replica go through it after a failover too.
		h, p, _ := strings.Cut(n.Announce, ":")
		fmt.Fprintf(&b, "replica-announce-ip %s\nreplica-announce-port %s\n", h, p)
	}
	if replicaOf != "" {
		h, p, _ := strings.Cut(replicaOf, ":")
		fmt.Fprintf(&b, "replicaof %s %s\n", h, p)
	}
	return b.String()
}

func writeFile(path, content string) error {
	return runfolder.Replace(path, []byte(content), 0o644)
}
