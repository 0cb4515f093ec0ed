package metrics

import (
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// hb builds a hand-written history: times in ms, one op per call.
type hb struct {
	ev []history.Event
}

func (h *hb) op(p int, f, tok string, call, ret int64, typ history.Type, mut func(*history.Event)) *hb {
	inv := history.Event{Time: call * 1e6, Process: history.Process(p), Type: history.Invoke, F: f, Key: "lock:{job-1}", Token: tok, Client: p % 4}
	done := inv
	done.Time, done.Type = ret*1e6, typ
	if mut != nil {
		mut(&done)
	}
	h.ev = append(h.ev, inv, done)
	return h
}

func (h *hb) nem(t int64, f string) *hb {
	h.ev = append(h.ev, history.Event{Time: t * 1e6, Process: history.Nemesis, Type: history.Info, F: f, Node: "valkey-0"})
	return h
}

func errText(s string) func(*history.Event) { return func(e *history.Event) { e.Error = s } }
func verdict(v string) func(*history.Event) {
	return func(e *history.Event) {
		e.Verdict = v
		if v == "rejected" {
			e.Error = "fence 3 is older than last_fence 5"
		}
	}
}

func TestRunCountsEveryFigure(t *testing.T) {
	const nh = "DELIFEQ returned 0: the lock expired or another client holds it (not held)"
	tests := []struct {
		name    string
		h       *hb
		seen    int
		metric  func(*Collector) float64
		want    float64
		summary func(Summary) int
	}{
		{"acquire ok", new(hb).op(0, "acquire", "a", 0, 2, history.OK, nil).op(1, "acquire", "b", 1, 3, history.OK, nil),
			0, func(c *Collector) float64 { return testutil.ToFloat64(c.acquires.WithLabelValues("ok", "")) }, 2,
			func(s Summary) int { return s.Acquires.OK }},
		{"acquire info", new(hb).op(0, "acquire", "a", 0, 1000, history.Info, errText("context deadline exceeded")),
			0, func(c *Collector) float64 { return testutil.ToFloat64(c.acquires.WithLabelValues("info", "")) }, 1,
			func(s Summary) int { return s.Acquires.Info }},
		{"acquire fail: contention", new(hb).op(0, "acquire", "a", 0, 1, history.Fail, errText("SET NX PX returned nil: another client holds the lock (not held)")),
			0, func(c *Collector) float64 {
				return testutil.ToFloat64(c.acquires.WithLabelValues("fail", "contention"))
			}, 1,
			func(s Summary) int { return s.Acquires.FailBy["contention"] }},
		{"acquire fail: wait", new(hb).op(0, "acquire", "a", 0, 101, history.Fail, errText("WAIT 1 100: 0 replica(s) acknowledged; lock released")),
			0, func(c *Collector) float64 { return testutil.ToFloat64(c.acquires.WithLabelValues("fail", "wait")) }, 1,
			func(s Summary) int { return s.Acquires.FailBy["wait"] }},
		{"acquire fail: noreplicas", new(hb).op(0, "acquire", "a", 0, 1, history.Fail, errText("SET NX PX in MULTI: NOREPLICAS Not enough good replicas to write.")),
			0, func(c *Collector) float64 {
				return testutil.ToFloat64(c.acquires.WithLabelValues("fail", "noreplicas"))
			}, 1,
			func(s Summary) int { return s.Acquires.FailBy["noreplicas"] }},
		{"acquire fail: unreachable", new(hb).op(0, "acquire", "a", 0, 1, history.Fail, errText("dial tcp 127.0.0.1:7000: connect: connection refused")),
			0, func(c *Collector) float64 {
				return testutil.ToFloat64(c.acquires.WithLabelValues("fail", "unreachable"))
			}, 1,
			func(s Summary) int { return s.Acquires.FailBy["unreachable"] }},
		{"acquire latency by outcome", new(hb).op(0, "acquire", "a", 0, 2, history.OK, nil).op(1, "acquire", "b", 0, 4, history.Fail, errText("x")),
			0, func(c *Collector) float64 { return float64(histCount(c, "lockjepsen_acquire_latency_seconds")) }, 2,
			func(s Summary) int { return s.AcquireLatencyMs["ok"].Count + s.AcquireLatencyMs["fail"].Count }},
		{"hold: acquire ok to release invoke", new(hb).op(0, "acquire", "a", 0, 2, history.OK, nil).op(0, "release", "a", 502, 503, history.OK, nil),
			0, func(c *Collector) float64 { return float64(histCount(c, "lockjepsen_hold_seconds")) }, 1,
			func(s Summary) int { return int(s.HoldMs.P50) }},
		{"no hold without a granted acquire", new(hb).op(0, "acquire", "a", 0, 2, history.Info, nil).op(8, "release", "a", 5, 6, history.OK, nil),
			0, func(c *Collector) float64 { return float64(histCount(c, "lockjepsen_hold_seconds")) }, 0,
			func(s Summary) int { return s.HoldMs.Count }},
		{"unlock mismatch", new(hb).op(0, "release", "a", 0, 1, history.Fail, errText(nh)).op(1, "release", "b", 0, 1, history.Fail, errText("redsync Unlock: redsync: failed to unlock, lock was already expired")),
			0, func(c *Collector) float64 { return testutil.ToFloat64(c.unlockMismatches) }, 2,
			func(s Summary) int { return s.UnlockMismatches }},
		{"a release refused by a dead node is no mismatch", new(hb).op(0, "release", "a", 0, 1, history.Fail, errText("DELIFEQ: dial tcp: connection refused")).op(1, "release", "b", 0, 1, history.OK, nil),
			0, func(c *Collector) float64 { return testutil.ToFloat64(c.unlockMismatches) }, 0,
			func(s Summary) int { return s.UnlockMismatches }},
		{"renew failures: fail and info", new(hb).op(4, "extend", "a", 0, 1, history.Fail, errText("SET IFEQ PX returned nil (not held)")).op(5, "extend", "b", 0, 1000, history.Info, errText("i/o timeout")).op(6, "extend", "c", 0, 1, history.OK, nil),
			0, func(c *Collector) float64 {
				return testutil.ToFloat64(c.renewFailures.WithLabelValues("fail")) + testutil.ToFloat64(c.renewFailures.WithLabelValues("info"))
			}, 2,
			func(s Summary) int { return s.RenewFailures }},
		{"fence rejections: reads and writes", new(hb).op(0, "read", "a", 0, 1, history.Fail, verdict("rejected")).op(0, "write", "a", 2, 3, history.Fail, verdict("rejected")).op(1, "write", "b", 2, 3, history.OK, verdict("accepted")),
			0, func(c *Collector) float64 {
				return testutil.ToFloat64(c.fenceRejections.WithLabelValues("read")) + testutil.ToFloat64(c.fenceRejections.WithLabelValues("write"))
			}, 2,
			func(s Summary) int { return s.FenceRejections }},
		{"double grants seen", new(hb), 3,
			func(c *Collector) float64 { return testutil.ToFloat64(c.doubleGrants) }, 3,
			func(s Summary) int { return s.DoubleGrantsSeen }},
		{"failovers", new(hb).nem(10, "kill").nem(2000, history.NFailover).nem(2100, "restart"),
			0, func(c *Collector) float64 { return testutil.ToFloat64(c.failovers) }, 1,
			func(s Summary) int { return s.Failovers }},
		{"faults by kind; heals and failovers are not faults", new(hb).nem(10, "kill").nem(20, "cut-replication").nem(2000, history.NFailover).nem(2100, "restart"),
			0, func(c *Collector) float64 {
				return testutil.ToFloat64(c.faults.WithLabelValues("kill")) + testutil.ToFloat64(c.faults.WithLabelValues("cut-replication"))
			}, 2,
			func(s Summary) int { return s.Faults["kill"] + s.Faults["cut-replication"] + s.Faults["restart"] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(nemesis.Catalog())
			r := c.NewRun(Info{Scenario: "baseline"})
			for _, e := range tt.h.ev {
				r.Observe(e)
			}
			r.DoubleGrantsSeen(tt.seen)
			if got := tt.metric(c); got != tt.want {
				t.Errorf("metric = %v, want %v", got, tt.want)
			}
			s := r.Summary()
			want := int(tt.want)
			if w, ok := summaryWant[tt.name]; ok {
				want = w
			}
			if got := tt.summary(s); got != want {
				t.Errorf("summary figure = %d, want %d (%+v)", got, want, s)
			}
			// The replay of the same history gives the same summary.
			rr := Replay(slices.Values(tt.h.ev), nemesis.Catalog())
			rr.DoubleGrantsSeen(tt.seen)
			if got := tt.summary(rr.Summary()); got != want {
				t.Errorf("replayed figure = %d, want %d", got, want)
			}
		})
	}
}

// summaryWant is the summary's figure where it is not the metric's value:
// the hold's p50 in ms.
var summaryWant = map[string]int{"hold: acquire ok to release invoke": 500}

func histCount(c *Collector, name string) uint64 {
	mfs, _ := c.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			var n uint64
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	return 0
}

// Completions from different processes arrive interleaved (client pipes);
// pairing is per process, so the figures do not depend on arrival order.
func TestArrivalOrderAcrossProcessesDoesNotMatter(t *testing.T) {
	h := new(hb).op(0, "acquire", "a", 0, 2, history.OK, nil).op(1, "acquire", "b", 1, 3, history.Fail, errText("another client holds the lock")).
		op(0, "release", "a", 10, 11, history.OK, nil)
	inOrder := Replay(slices.Values(h.ev), nemesis.Catalog()).Summary()
	// Process 1's events first, then process 0's.
	var mixed []history.Event
	for _, p := range []history.Process{1, 0} {
		for _, e := range h.ev {
			if e.Process == p {
				mixed = append(mixed, e)
			}
		}
	}
	got := Replay(slices.Values(mixed), nemesis.Catalog()).Summary()
	if !reflect.DeepEqual(got.Acquires, inOrder.Acquires) || got.Acquires.OK != 1 || got.Acquires.FailBy["contention"] != 1 {
		t.Fatalf("arrival order changed the counts: %+v vs %+v", got.Acquires, inOrder.Acquires)
	}
	if got.HoldMs != inOrder.HoldMs || got.HoldMs.Count != 1 {
		t.Fatalf("hold %+v vs %+v", got.HoldMs, inOrder.HoldMs)
	}
}

func TestPercentilesAreNearestRank(t *testing.T) {
	var ns []int64
	for i := int64(1); i <= 100; i++ {
		ns = append(ns, i*1e6)
	}
	p := percentiles(ns)
	if p.Count != 100 || p.P50 != 50 || p.P99 != 99 {
		t.Fatalf("%+v", p)
	}
}

func TestDoubleGrantsSeenNeverGoesBackAndTwoRunsAdd(t *testing.T) {
	c := New(nemesis.Catalog())
	a, b := c.NewRun(Info{}), c.NewRun(Info{})
	a.DoubleGrantsSeen(2)
	a.DoubleGrantsSeen(1) // a late, smaller report is ignored
	b.DoubleGrantsSeen(3)
	if got := testutil.ToFloat64(c.doubleGrants); got != 5 {
		t.Fatalf("double grants %v, want 5", got)
	}
	var nilRun *Run
	nilRun.Observe(history.Event{})
	nilRun.DoubleGrantsSeen(1)
}

func TestServerServesAndRefusesBadAddresses(t *testing.T) {
	for _, bad := range []string{"nonsense", "127.0.0.1", "127.0.0.1:http-nope", ":99999"} {
		if _, err := Listen(bad, New(nemesis.Catalog())); err == nil {
			t.Errorf("Listen(%q) accepted a bad address", bad)
		}
	}
	c := New(nemesis.Catalog())
	s, err := Listen("127.0.0.1:0", c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.NewRun(Info{Scenario: "failover-race", Recipe: "native", Fence: "read-write", Cell: "none.link-down", Trial: 3})
	c.NewRun(Info{Scenario: "baseline", Recipe: "native", Fence: "read-write"}).Observe(history.Event{Process: history.Nemesis, Type: history.Info, F: history.NFailover})
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"lockjepsen_failovers_total 1", `lockjepsen_acquires_total{outcome="fail",reason="contention"} 0`,
		`lockjepsen_run_info{cell="",fence="read-write",recipe="native",scenario="baseline"} 1`, "lockjepsen_hold_seconds_bucket",
		`lockjepsen_trial{cell="none.link-down"} 3`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
