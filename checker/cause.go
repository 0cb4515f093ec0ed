package checker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// fault is one nemesis fault with the interval it was in force, or an observed
// failover (a point).
type fault struct {
	f      string // kill, pause-client, failover, ...
	node   string
	client int // target client slot for client faults, else -1
	start  int64
	end    int64 // heal time; never when it was never healed
	index  int64
}

func (f fault) String() string {
	if f.node != "" {
		return f.f + " " + f.node
	}
	return f.f
}

// faults pairs each fault with its heal (same node, matching heal name).
func faults(nem []history.Event) []fault {
	var out []fault
	open := make(map[string][]int) // heal f + node → indexes of unhealed faults
	for _, e := range nem {
		if m, isFault := nemesis.MarkOf(e.F); isFault {
			heal := m.Heal
			out = append(out, fault{f: e.F, node: e.Node, client: targetClient(e), start: e.Time, end: never, index: e.Index})
			k := heal + "\x00" + e.Node
			open[k] = append(open[k], len(out)-1)
			continue
		}
		if e.F == history.NFailover {
			out = append(out, fault{f: e.F, node: e.Node, client: -1, start: e.Time, end: e.Time, index: e.Index})
			continue
		}
		k := e.F + "\x00" + e.Node
		if q := open[k]; len(q) > 0 {
			out[q[0]].end = e.Time
			open[k] = q[1:]
		}
	}
	return out
}

// targetClient reads the client slot a client fault targets: the event's client
// field, or the number at the end of its node name (client-3, c3, 3).
func targetClient(e history.Event) int {
	if !strings.Contains(e.F, "client") {
		return -1
	}
	n := strings.TrimLeftFunc(e.Node, func(r rune) bool { return r < '0' || r > '9' })
	if v, err := strconv.Atoi(n); err == nil {
		return v
	}
	return e.Client
}

// attribute names the cause of a violation in [from, to] involving the given
// clients. A double grant is blamed on a server-side fault; a lease that
// expired under a client is blamed on that client's pause or clock. slack
// widens the window for point events (an observed failover is logged after the
// promotion it reports).
func attribute(fs []fault, from, to, slack int64, clients []int, doubleGrant bool) (string, []string) {
	type cand struct {
		cause string
		f     fault
	}
	var cs []cand
	for _, f := range fs {
		s, e := f.start, f.end
		if s == e {
			s, e = s-slack, e+slack
		}
		if e < from || s > to {
			continue
		}
		c := nemesis.CauseOf(f.f)
		if f.client >= 0 && !contains(clients, f.client) {
			continue // a pause of an uninvolved client explains nothing here
		}
		if cc, _ := nemesis.LookupCause(c); doubleGrant && cc.Client {
			continue
		}
		cs = append(cs, cand{c, f})
	}
	if len(cs) == 0 {
		return "none", nil
	}
	sort.SliceStable(cs, func(i, j int) bool {
		ri, rj := causePriority(cs[i].cause, doubleGrant), causePriority(cs[j].cause, doubleGrant)
		if ri != rj {
			return ri < rj
		}
		return cs[i].f.start > cs[j].f.start // the most recent
	})
	names := make([]string, 0, len(cs))
	seen := make(map[string]bool)
	for _, c := range cs {
		n := fmt.Sprint(c.f)
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return cs[0].cause, names
}

// causePriority orders the causes in force (nemesis.Cause's rank): the
// faults that can make a correct-looking server hand out a lock twice come
// first, those that only make a client outlive its lease after.
func causePriority(cause string, doubleGrant bool) int {
	c, ok := nemesis.LookupCause(cause)
	if !ok {
		return 100
	}
	if !doubleGrant && c.Client {
		return c.Rank - 100 // an honest expiry is explained first by the client that overslept
	}
	return c.Rank
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
