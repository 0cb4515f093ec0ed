package workshop

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Closing is lab 8's text: the room's measurements from labs 2 to 8, then the
// Valkey 9 lock article's decision table with those numbers as the evidence for each row.
func Closing(ev *Evidence) string {
	var b strings.Builder
	b.WriteString("What this room measured:\n\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSETTING\tLOCK\tRESOURCE\tDOUBLE HOLDERS\tEXPOSURE ms\tACQUIRE p99 ms\tNOTE")
	for _, l := range Labs() {
		for _, s := range l.Steps {
			if s.Kind != KindRun {
				continue
			}
			o := ev.Others[s.Name]
			if o == nil || o.Result == nil {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\tnot run yet: lockjepsen lab %d\n", s.Name, setting(s), l.N)
				continue
			}
			r := o.Result
			note := ""
			switch {
			case o.WaitShort > 0:
				note = fmt.Sprintf("%d acquires refused by WAIT", o.WaitShort)
			case o.NoReplicas > 0:
				note = fmt.Sprintf("%d acquires refused with NOREPLICAS", o.NoReplicas)
			case r.StaleWrites.Accepted > 0 && s.Flag("--fence") != "read-write" && s.Flag("--fence") != "":
				note = fmt.Sprintf("%d stale writes accepted", r.StaleWrites.Accepted)
			case r.StaleWrites.Rejected > 0:
				note = fmt.Sprintf("%d stale writes rejected", r.StaleWrites.Rejected)
			}
			if r.Resource.LostUpdates > 0 {
				note = strings.TrimPrefix(note+fmt.Sprintf("; %d lost updates", r.Resource.LostUpdates), "; ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.0f\t%.1f\t%s\n", s.Name, setting(s), r.Lock.Valid, r.Resource.Valid,
				r.DoubleHolders, r.ExposureMs.Total, r.LatencyMs.Acquire.P99, note)
		}
	}
	tw.Flush()
	if w := ev.Others["lab4-window"]; w != nil && w.Transcript != nil {
		fmt.Fprintf(&b, "\nlab4-window: with min-replicas-max-lag %d s the primary acknowledged writes for %.1f s after both replicas froze.\n",
			WindowMaxLag, w.Transcript.Figures["window_s"])
	}
	b.WriteString(`
Which lock for which job (the decision table of "Distributed Locks on Valkey 9 Without Lua: SET IFEQ and DELIFEQ"; the evidence is today's):

  If a double holder means...                 Use...                                   Evidence from today
  duplicate work (two workers rebuild the     a single-instance lock with replicas     lab 2: a failover granted the lock twice;
  same cache entry)                                                                    lab 3/4: WAIT and min-replicas narrow it
  wrong data (two invoice runs post the       the lock plus a fencing check at the     lab 5/6: without a fence, lost updates;
  same batch)                                 resource, reads and writes; the number   with the read-write fence, none; lab 2:
                                              from the database's own sequence         the database's number turns the STALE
                                                                                       holder away, Valkey's the newer
  wrong data, and the resource cannot         a consensus lock service (etcd,          lab 3: a fast restart loses WAIT-acked
  check a fence                               ZooKeeper) or the database's own lock    locks; lab 7: clocks end leases early;
                                              (behind a transaction-mode pooler, a     lab 8: the pooler handed a session lock
                                              transaction lock, not a session lock)    to two clients with no fault at all

Redlock is in no row of that table: lab 7 saw five primaries grant twice after one node's clock jumped, and
Redlock has no counter of its own to fence with. The comparison sweep (results/comparison/README.md)
puts it in rows: Redlock alone lost updates to paused holders (11) and clock jumps (19); fenced by the database's
own number (--fence-source resource) it lost none, like Sentinel with that fence, etcd and the database's lease.
`)
	return b.String()
}

// setting is a step's flags minus the time limit, for the closing table.
func setting(s Step) string {
	var parts []string
	for i := 0; i < len(s.Args); i++ {
		a := s.Args[i]
		if a == "--time-limit" {
			i++
			continue
		}
		parts = append(parts, strings.TrimPrefix(a, "--scenario "))
	}
	return strings.TrimPrefix(strings.Join(parts, " "), "--scenario ")
}
