package checker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
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
	moment string      // its dangerous moment (marks.Mark.MomentOf)
	cause  marks.Cause // what it is blamed on; Name "unknown" when the catalog has no such cause
}

func (f fault) String() string {
	if f.node != "" {
		return f.f + " " + f.node
	}
	return f.f
}

// faults pairs each fault with its heal (same node, matching heal name), as
// the catalog cat reads the events.
func faults(nem []history.Event, cat *marks.Catalog) []fault {
	var out []fault
	open := make(map[string][]int) // heal f + node → indexes of unhealed faults
	causeOf := func(name string) marks.Cause {
		if c, ok := cat.LookupCause(name); ok {
			return c
		}
		return marks.Cause{Name: name, Rank: 100}
	}
	for _, e := range nem {
		if m, isFault := cat.Of(e.F); isFault {
			heal := m.Heal
			out = append(out, fault{f: e.F, node: e.Node, client: targetClient(e, cat.Client(m)), start: e.Time, end: never, index: e.Index,
				moment: m.MomentOf(), cause: causeOf(m.Cause)})
			k := heal + "\x00" + e.Node
			open[k] = append(open[k], len(out)-1)
			continue
		}
		if e.F == history.NFailover {
			out = append(out, fault{f: e.F, node: e.Node, client: -1, start: e.Time, end: e.Time, index: e.Index, cause: causeOf(marks.CauseFailover)})
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

// observedLag bounds how long after a promotion its failover observation is
// logged: the runner asks the Sentinels (or the cluster bus, or the members) every
// 250 ms and a fault's WaitFailover every 50 ms, and the clients learn of the
// new primary from the same Sentinels. Over the 135 failovers observed in 67
// cluster and Sentinel runs of this session, no fault-driven observation came
// more than 5 ms after the first grant that followed its kill. A violation more than
// this before an observation did not happen on that promotion. (The
// lease-long slack used before let a run's next failover, 8 s after a double
// grant, lead its list.)
const observedLag = int64(time.Second)

// targetClient reads the client slot a client fault targets (its mark's
// cause is a client's own doing): the number at the end of its node name
// (client-3, c3, 3), or the event's client field.
func targetClient(e history.Event, client bool) int {
	if !client {
		return -1
	}
	n := strings.TrimLeftFunc(e.Node, func(r rune) bool { return r < '0' || r > '9' })
	if v, err := strconv.Atoi(n); err == nil {
		return v
	}
	return e.Client
}

// attribute names the cause of a violation in force over [from, to] that came
// about at at (the second grant, the later of two sections, the stale write),
// involving the given clients. A double grant is blamed on a server-side fault;
// a lease that expired under a client is blamed on that client's pause or
// clock.
//
// A fault counts only if it began by at: one that began later cannot have
// caused it. Point events (an observed failover) get slack backwards only,
// since one is logged after the promotion it reports, never before, and
// at most observedLag after it, however long the leases are.
//
// The faults come back in order of relevance, and the cause is the first's:
// within the highest-ranked cause in force, first the faults whose window
// holds at (the kill that forced the failover, and the observed failovers,
// whose promotion lasts), then those whose window holds from (the cut that
// made the first grant unreplicated), then the rest; nearer at first within
// each, so the failover that let the second grant happen leads.
func attribute(fs []fault, from, at, to, slack int64, clients []int, doubleGrant bool) (string, []string) {
	type cand struct {
		cause string
		f     fault
		class int
		dist  int64
	}
	at = min(max(at, from), to)
	lag := min(slack, observedLag)
	var cs []cand
	for _, f := range fs {
		s, e := f.start, f.end
		point := s == e
		if point {
			s = s - lag
		}
		if e < from || s > to || s > at {
			continue
		}
		if f.client >= 0 && !contains(clients, f.client) {
			continue // a pause of an uninvolved client explains nothing here
		}
		if doubleGrant && f.cause.Client {
			continue
		}
		class := 2
		switch {
		case point || s <= at && at <= e:
			class = 0
		case s <= from && from <= e:
			class = 1
		}
		dist := f.start - at
		if dist < 0 {
			dist = -dist
		}
		cs = append(cs, cand{f.cause.Name, f, class, dist})
	}
	if len(cs) == 0 {
		return "none", nil
	}
	sort.SliceStable(cs, func(i, j int) bool {
		ri, rj := causePriority(cs[i].f.cause, doubleGrant), causePriority(cs[j].f.cause, doubleGrant)
		if ri != rj {
			return ri < rj
		}
		if cs[i].class != cs[j].class {
			return cs[i].class < cs[j].class
		}
		return cs[i].dist < cs[j].dist
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

// causePriority orders the causes in force (marks.Cause's rank): the
// faults that can make a correct-looking server hand out a lock twice come
// first, those that only make a client outlive its lease after.
func causePriority(c marks.Cause, doubleGrant bool) int {
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
