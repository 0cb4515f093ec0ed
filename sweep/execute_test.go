package sweep

import (
	"context"
	"encoding/json"
	"github.com/lockjepsen/lockjepsen/exitcode"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runner"
)

// fakeRun stands in for runner.Run in the scheduling tests: it writes a small
// history in which a cut-replication fault is followed by a failover and, for
// odd seeds, a second client granted the lock while the first still holds it;
// then the real checker checks it. It runs in milliseconds and needs no
// Valkey, so the tests of resume and interruption never wait on a cluster.
func fakeRun(ctx context.Context, cfg runner.Config, _ io.Writer) runner.Outcome {
	o := runner.Outcome{Dir: cfg.Out, ExitCode: exitcode.Crashed}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(cfg.Out, "config.json"), b, 0o644); err != nil {
		o.Err = err
		return o
	}
	ms := int64(time.Millisecond)
	key := "lock:{job-1}"
	ev := []history.Event{
		{Time: 100 * ms, Process: 0, Client: 0, Type: history.Invoke, F: history.FAcquire, Key: key, Token: "a", TTLMs: 3000},
		{Time: 101 * ms, Process: 0, Client: 0, Type: history.OK, F: history.FAcquire, Key: key, Token: "a", Fence: 1},
		{Time: 102 * ms, Process: 1, Client: 1, Type: history.Invoke, F: history.FAcquire, Key: key, Token: "x", TTLMs: 3000},
		{Time: 103 * ms, Process: 1, Client: 1, Type: history.Fail, F: history.FAcquire, Key: key, Token: "x", Error: "SET NX PX returned nil: another client holds the lock"},
		{Time: 110 * ms, Process: 2, Client: 2, Type: history.Invoke, F: history.FAcquire, Key: key, Token: "y", TTLMs: 3000},
		{Time: 112 * ms, Process: 2, Client: 2, Type: history.Fail, F: history.FAcquire, Key: key, Token: "y", Error: "MULTI fenced acquire, command 1: NOREPLICAS Not enough good replicas to write."},
		{Time: 200 * ms, Process: history.Nemesis, Type: history.Info, F: "cut-replication", Node: "valkey-0", Role: "primary"},
		{Time: 300 * ms, Process: history.Nemesis, Type: history.Info, F: "kill", Node: "valkey-0", Role: "primary"},
		{Time: 1500 * ms, Process: history.Nemesis, Type: history.Info, F: history.NFailover, Node: "valkey-1", Role: "primary"},
	}
	if cfg.Seed%2 == 1 {
		ev = append(ev,
			history.Event{Time: 1600 * ms, Process: 3, Client: 3, Type: history.Invoke, F: history.FAcquire, Key: key, Token: "b", TTLMs: 3000},
			history.Event{Time: 1602 * ms, Process: 3, Client: 3, Type: history.OK, F: history.FAcquire, Key: key, Token: "b", Fence: 1},
			history.Event{Time: 1700 * ms, Process: 3, Client: 3, Type: history.Invoke, F: history.FRelease, Key: key, Token: "b"},
			history.Event{Time: 1701 * ms, Process: 3, Client: 3, Type: history.OK, F: history.FRelease, Key: key, Token: "b"},
		)
	}
	ev = append(ev,
		history.Event{Time: 2000 * ms, Process: history.Nemesis, Type: history.Info, F: "restart", Node: "valkey-0", Role: "replica"},
		history.Event{Time: 2100 * ms, Process: history.Nemesis, Type: history.Info, F: "heal-replication", Node: "valkey-0", Role: "replica"},
		history.Event{Time: 2500 * ms, Process: 0, Client: 0, Type: history.Invoke, F: history.FRelease, Key: key, Token: "a"},
		history.Event{Time: 2501 * ms, Process: 0, Client: 0, Type: history.OK, F: history.FRelease, Key: key, Token: "a"},
	)
	for i := range ev {
		ev[i].Index = int64(i)
	}
	if err := history.WriteFile(filepath.Join(cfg.Out, "history.jsonl"), ev); err != nil {
		o.Err = err
		return o
	}
	_, code, err := runner.CheckDir(cfg.Out, runner.CheckOptions{NoHTML: true})
	if err != nil {
		o.Err = err
		return o
	}
	o.Checked, o.ExitCode = true, code
	return o
}

func testPlan() Plan {
	none, _ := LookupConfig("none")
	w, _ := LookupConfig("wait-1-100ms")
	f, _ := LookupFault("link-down")
	p := Plan{Trials: 3, Configs: []Config{none, w}, Faults: []Fault{f}, TimeLimit: Duration(12 * time.Second)}
	p.Defaults()
	return p
}

func TestExecuteAggregatesAndFiles(t *testing.T) {
	dir := t.TempDir()
	if err := Start(dir, testPlan()); err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), dir, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trials != 6 || rep.Pending != 0 || rep.Failed != 0 {
		t.Fatalf("trials %d pending %d failed %d, want 6/0/0", rep.Trials, rep.Pending, rep.Failed)
	}
	for _, c := range rep.Cells {
		// Seeds 1, 2, 3: odd ones double-grant once each after one failover.
		if c.Failovers != 3 || c.Opportunities != 3 || c.Hits != 2 || c.DoubleGrants != 2 {
			t.Errorf("%s: failovers %d opportunities %d hits %d grants %d, want 3 3 2 2", c.Cell, c.Failovers, c.Opportunities, c.Hits, c.DoubleGrants)
		}
		lo, hi := Wilson(2, 3, Z95)
		if c.P == nil || *c.P != 2.0/3 || c.PLow != lo || c.PHi != hi {
			t.Errorf("%s: P %v [%v, %v]", c.Cell, c.P, c.PLow, c.PHi)
		}
		if c.Parallel != 1 {
			t.Errorf("%s: parallel %d, want the plan's 1 recorded by every trial", c.Cell, c.Parallel)
		}
		if c.Acquires.Contention != 3 || c.Acquires.RefusedBy["noreplicas"] != 3 || c.Acquires.Total != 11 {
			t.Errorf("%s: acquires %+v", c.Cell, c.Acquires)
		}
	}
	// The rates: every opportunity in the span of the trials, and each fault
	// kind's share at the sweep's concurrency.
	if rep.SpanS <= 0 || len(rep.Rates) != 1 {
		t.Fatalf("span %v s, rates %+v: want a span and one fault kind", rep.SpanS, rep.Rates)
	}
	if k := rep.Rates[0]; k.Opportunities != 6 || k.Trials != 6 || k.Cells != 2 ||
		math.Abs(rep.PerMinute-6/(rep.SpanS/60)) > 1e-9 || math.Abs(k.PerMinute-k.PerTrialMinute*rep.TrialS/rep.SpanS) > 1e-9 {
		t.Errorf("rates %+v, per minute %v over %v s: want 6 opportunities in 6 trials of 2 cells, per minute = 6 / span", k, rep.PerMinute, rep.SpanS)
	}
	for _, f := range []string{"plan.json", "sweep.json", "sweep.csv", "index.html", "probability.png", "probability.svg", "exposure.png", "exposure.svg", "cost.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	assertRecomputable(t, dir)
}

// TestInterruptAndResume cancels the sweep during its third trial, checks that
// the finished trials are kept and the interrupted one is moved aside, then
// resumes and gets the same aggregates as an uninterrupted sweep.
func TestInterruptAndResume(t *testing.T) {
	dir := t.TempDir()
	if err := Start(dir, testPlan()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	interrupting := func(c context.Context, cfg runner.Config, w io.Writer) runner.Outcome {
		if n.Add(1) == 3 {
			cancel()
			return runner.Outcome{Dir: cfg.Out, ExitCode: exitcode.Crashed}
		}
		return fakeRun(c, cfg, w)
	}
	rep, err := Execute(ctx, dir, Options{Run: interrupting})
	if err == nil {
		t.Fatal("an interrupted sweep must report it")
	}
	if rep.Trials != 2 || rep.Pending != 4 {
		t.Fatalf("after interruption: %d trials kept, %d pending; want 2 and 4", rep.Trials, rep.Pending)
	}
	rec, err := ReadRecord(filepath.Join(dir, "trials", "none.link-down", "2"))
	if err != nil || rec.Status != StatusInterrupted {
		t.Fatalf("trial 2: %+v %v, want status interrupted", rec, err)
	}
	rep, err = Execute(context.Background(), dir, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trials != 6 || rep.Pending != 0 {
		t.Fatalf("after resume: %d trials, %d pending", rep.Trials, rep.Pending)
	}
	if _, err := os.Stat(filepath.Join(dir, "trials", "none.link-down", "2.interrupted")); err != nil {
		t.Errorf("the interrupted trial's folder was not kept aside: %v", err)
	}
	ref := t.TempDir()
	if err := Start(ref, testPlan()); err != nil {
		t.Fatal(err)
	}
	want, err := Execute(context.Background(), ref, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Cells {
		want.Cells[i].WallS, rep.Cells[i].WallS = 0, 0
	}
	if !reflect.DeepEqual(want.Cells, rep.Cells) {
		t.Errorf("resumed sweep differs from an uninterrupted one:\n got %+v\nwant %+v", rep.Cells, want.Cells)
	}
}

// TestMinFailovers adds trials until each cell saw enough failovers.
func TestMinFailovers(t *testing.T) {
	dir := t.TempDir()
	p := testPlan()
	p.Trials, p.MinFailovers, p.MaxTrials = 1, 4, 10
	if err := Start(dir, p); err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), dir, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		if c.Trials != 4 || c.Failovers != 4 {
			t.Errorf("%s: %d trials, %d failovers; want 4 and 4 (one failover a trial)", c.Cell, c.Trials, c.Failovers)
		}
	}
	if rep.Pending != 0 {
		t.Errorf("pending %d: trials beyond --trials are not pending", rep.Pending)
	}
}

func TestPlanParsing(t *testing.T) {
	c, err := LookupConfig("wait-1-100ms+fsync-always")
	if err != nil || c.Wait != "1:100ms" || !c.AppendOnly || c.AppendFsync != "always" {
		t.Errorf("combination: %+v %v", c, err)
	}
	c, err = ParseConfig("strict=wait=2:50ms;min-replicas=1:1;appendonly")
	if err != nil || c.Wait != "2:50ms" || c.MinReplicas != "1:1" || !c.AppendOnly {
		t.Errorf("custom: %+v %v", c, err)
	}
	f, err := LookupFault("split-brain:duration=4s")
	if err != nil || f.Faults[0] != "pause-primary" || time.Duration(f.Duration) != 4*time.Second || f.Name != "split-brain-d4s" {
		t.Errorf("fault params: %+v %v", f, err)
	}
	p := testPlan()
	p.Faults, p.TimeLimit = []Fault{f}, Duration(20*time.Second)
	cfg, err := p.RunConfig(p.Cells()[1], 2, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 3 || cfg.Wait.Replicas != 1 || cfg.Wait.TimeoutMs != 100 {
		t.Errorf("run config: seed %d wait %+v", cfg.Seed, cfg.Wait)
	}
	for _, s := range cfg.Schedule {
		if s.Duration != 4*time.Second {
			t.Errorf("step %v: duration not overridden", s)
		}
	}
	bad := testPlan()
	bad.Configs = append(bad.Configs, Config{Name: "x", Wait: "3:100ms"})
	if err := bad.Validate(); err == nil {
		t.Error("WAIT 3 with 2 replicas must be refused before the sweep starts")
	}
	path := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(path, []byte(`{"trials": 5, "configs": [{"name": "none"}, {"name": "mine", "wait": "1:20ms"}], "faults": [{"name": "split-brain", "duration": "3s"}]}`), 0o644)
	fp, err := ReadPlanFile(path)
	if err != nil || fp.Trials != 5 || fp.Configs[0].Note == "" || fp.Configs[1].Wait != "1:20ms" || fp.Faults[0].Faults[0] != "pause-primary" || time.Duration(fp.Faults[0].Duration) != 3*time.Second {
		t.Errorf("sweep file: %+v %v", fp, err)
	}
}

// assertRecomputable checks the contract of sweep.json: every aggregate is
// what the trials' own files say. Counts and sums come straight from each
// results.json; the per-trial reading of history.jsonl must agree with the
// checker's ops and latency figures in results.json; and re-aggregating the
// folder reproduces sweep.json.
func assertRecomputable(t *testing.T, dir string) {
	t.Helper()
	var stored Report
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	again, err := Aggregate(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Through JSON, as stored, so float formatting is the same on both sides.
	var re Report
	b2, _ := json.Marshal(again)
	_ = json.Unmarshal(b2, &re)
	if !reflect.DeepEqual(stored.Cells, re.Cells) {
		t.Errorf("sweep.json differs from a re-aggregation of the trials:\nstored %+v\n again %+v", stored.Cells, re.Cells)
	}
	for _, c := range stored.Cells {
		var cell Cell
		for _, x := range stored.Plan.Cells() {
			if x.ID() == c.Cell {
				cell = x
			}
		}
		dirs, err := TrialDirs(dir, cell)
		if err != nil {
			t.Fatal(err)
		}
		var failovers, grants, staleRej, staleAcc, trials int
		maxExp := 0.0
		for _, d := range dirs {
			var r struct {
				Failovers        int `json:"failovers"`
				DoubleHolderList []struct {
					DoubleGrant bool    `json:"double_grant"`
					OverlapMs   float64 `json:"overlap_ms"`
				} `json:"double_holder_list"`
				StaleWrites struct{ Rejected, Accepted int }        `json:"stale_writes"`
				Ops         map[string]struct{ OK, Fail, Info int } `json:"ops"`
				LatencyMs   struct {
					Acquire struct {
						Count    int
						P50, P99 float64
					}
				} `json:"latency_ms"`
			}
			rb, err := os.ReadFile(filepath.Join(d, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rb, &r); err != nil {
				t.Fatal(err)
			}
			trials++
			failovers += r.Failovers
			for _, h := range r.DoubleHolderList {
				if h.DoubleGrant {
					grants++
					maxExp = max(maxExp, h.OverlapMs)
				}
			}
			staleRej += r.StaleWrites.Rejected
			staleAcc += r.StaleWrites.Accepted
			tr, err := LoadTrial(d, cell.Fault)
			if err != nil {
				t.Fatal(err)
			}
			acq := r.Ops["acquire"]
			if tr.Acquires.OK != acq.OK || tr.Acquires.Contention+tr.Acquires.Refused != acq.Fail || tr.Acquires.Unknown != acq.Info {
				t.Errorf("%s: acquires read from the history %+v, results.json ops %+v", d, tr.Acquires, acq)
			}
			lat := Summarize(tr.AcquireAllMs)
			if lat.Count != r.LatencyMs.Acquire.Count || !near(lat.P50, r.LatencyMs.Acquire.P50) || !near(lat.P99, r.LatencyMs.Acquire.P99) {
				t.Errorf("%s: acquire latency from the history %+v, results.json %+v", d, lat, r.LatencyMs.Acquire)
			}
		}
		if c.Trials != trials || c.Failovers != failovers || c.DoubleGrants != grants || c.ExposureMs.Max != maxExp ||
			c.StaleWrites.Rejected != staleRej || c.StaleWrites.Accepted != staleAcc {
			t.Errorf("%s: aggregates %+v do not match the trials' results.json (trials %d failovers %d grants %d max %v stale %d/%d)",
				c.Cell, c, trials, failovers, grants, maxExp, staleRej, staleAcc)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// A fault parameter that cannot mean anything is refused with the value the
// user typed, on --faults and in a sweep file, before a plan is written.
func TestFaultParametersRefused(t *testing.T) {
	for _, tc := range []struct{ spec, says string }{
		{"split-brain:duration=-4s", "duration=-4s: want a duration above 0, e.g. split-brain:duration=4s"},
		{"link-down:interval=0s", "interval=0s: want a duration above 0"},
		{"split-brain:duration=soon", `duration="soon" is not a duration`},
		{"split-brain:length=4s", `parameter "length": want duration= or interval=`},
		// cut-replication and kill-primary act at once: a duration was
		// dropped without a word before.
		{"link-down:duration=4s", "duration=4s: cut-replication acts at once and is held for no time; leave duration= out"},
		{"kill-primary:duration=4s", "duration=4s: kill-primary acts at once"},
	} {
		if _, err := LookupFault(tc.spec); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", tc.spec, err, tc.says)
		}
	}
	path := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(path, []byte(`{"trials": 2, "configs": [{"name": "none"}], "faults": [{"name": "link-down", "duration": "-4s"}]}`), 0o644)
	if _, err := ReadPlanFile(path); err == nil || !strings.Contains(err.Error(), `fault "link-down": duration -4s`) {
		t.Errorf("sweep file with duration -4s: %v, want it refused naming the value", err)
	}
	for _, tc := range []struct{ file, says string }{
		{`{"faults": [{"name": "link-down", "duration": "4s"}]}`, `fault "link-down": duration 4s: cut-replication acts at once`},
		{`{"faults": [{"name": "mine", "faults": ["kill-primary"], "duration": "4s"}]}`, `fault "mine": duration 4s: kill-primary acts at once`},
		{`{"faults": [{"name": "mine", "faults": ["pause-primary"], "interval": "-1s"}]}`, `fault "mine": duration 0s, interval -1s`},
	} {
		os.WriteFile(path, []byte(tc.file), 0o644)
		if _, err := ReadPlanFile(path); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("sweep file %s: %v, want it refused saying %q", tc.file, err, tc.says)
		}
	}
	// A held fault takes its duration, in a file as on the flag.
	os.WriteFile(path, []byte(`{"faults": [{"name": "split-brain", "duration": "4s"}]}`), 0o644)
	if p, err := ReadPlanFile(path); err != nil || time.Duration(p.Faults[0].Duration) != 4*time.Second {
		t.Errorf("split-brain with duration 4s in a sweep file: %+v, %v", p.Faults, err)
	}
}

// A deployment's own flag in a configuration (NAME=VALUE) reaches the run
// as its --NAME sets it: into a field of the config (--shards, --members)
// or its Opts (--pooler); on a deployment that does not own it, refused.
func TestConfigDeploymentFlags(t *testing.T) {
	f, err := LookupFault("paused-client") // a client's fault: it runs on every deployment
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec string
		want func(runner.Config) bool
		err  string
	}{
		{spec: "big=topology=cluster;recipe=native;fence=none;shards=5", want: func(c runner.Config) bool { return c.Cluster.Shards == 5 }},
		{spec: "five=topology=etcd;recipe=etcd-mutex;fence=none;members=5", want: func(c runner.Config) bool { return c.Cluster.Members == 5 }},
		{spec: "pooled=topology=postgres;recipe=pg-advisory;fence=none;pooler=session", want: func(c runner.Config) bool { return c.Cluster.Opt("pooler") == "session" }},
		{spec: "wrong=shards=5", err: "--shards 5: it is an option of --topology cluster, and this run uses sentinel"},
		{spec: "small=topology=cluster;recipe=native;fence=none;shards=2", err: "2 is out of range: want 3 to 9"},
	} {
		c, err := ParseConfig(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		p := Plan{Trials: 1, Configs: []Config{c}, Faults: []Fault{f}, TimeLimit: Duration(30 * time.Second)}
		p.Defaults()
		cfg, err := p.RunConfig(p.Cells()[0], 0, t.TempDir())
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.spec, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.spec, err)
		case tc.err == "" && !tc.want(cfg):
			t.Errorf("%s: the run config does not hold it: %+v", tc.spec, cfg.Cluster)
		}
	}
}
