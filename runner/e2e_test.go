package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/internal/testbin"
	"github.com/lockjepsen/lockjepsen/internal/testslot"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// These tests run lockjepsen as users do: real Valkey, Sentinels, client
// processes and the resource service, started from a freshly built binary.

var exe string

func TestMain(m *testing.M) { testbin.Main(m.Run, "../cmd/lockjepsen", &exe) }

func config(t *testing.T, name string, mutate func(*Config)) Config {
	t.Helper()
	sc, err := scenario.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromScenario(sc)
	cfg.Exe = exe
	cfg.Out = filepath.Join(t.TempDir(), "run")
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) { return len(p), nil }

func runAndLoad(t *testing.T, cfg Config) (Outcome, *checker.Result) {
	t.Helper()
	o := Run(context.Background(), cfg, testLog{t})
	if step, stepped := HostClockStepped(cfg.Out); stepped && o.Checked {
		// Valkey expires keys by the wall clock: a run whose host clock
		// stepped (a paused machine; 9.1 s once in a CI run) shows the
		// machine, not the scenario. Once more, in the same folder.
		t.Logf("the host's wall clock moved %v during the run; once more", step)
		if err := os.RemoveAll(cfg.Out); err != nil {
			t.Fatal(err)
		}
		o = Run(context.Background(), cfg, testLog{t})
	}
	if !o.Checked {
		t.Fatalf("run not checked: %v", o.Err)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r checker.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	firstLog := "logs/" + cfg.Cluster.Deployment().Layout(cfg.Cluster)[0].Name + ".log"
	for _, f := range []string{"config.json", "history.jsonl", "nemesis.jsonl", "resource.jsonl", "summary.txt", "timeline.png", "timeline.svg", "index.html", firstLog} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Errorf("run folder lacks %s", f)
		}
	}
	assertNoProcessesLeft(t, cfg.Out)
	return o, &r
}

// assertNoProcessesLeft checks that no process the run started outlived it.
func assertNoProcessesLeft(t *testing.T, out string) {
	t.Helper()
	testbin.AssertNoProcessesLeft(t, out)
}

func TestBaselineIsValidOverThreeSeeds(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			testslot.Parallel(t)
			cfg := config(t, "baseline", func(c *Config) { c.Seed = seed })
			o, r := runAndLoad(t, cfg)
			if r.Valid != checker.Valid || o.ExitCode != 0 {
				t.Fatalf("a clean run checked %v (exit %d): a false alarm\n%s\n%s", r.Valid, o.ExitCode, o.Summary, unexplained(cfg.Out, r))
			}
			if r.Ops["acquire"] == nil || r.Ops["acquire"].OK < 100 || r.Ops["write"].OK < 100 {
				t.Fatalf("too little work to mean anything: %+v", r.Ops)
			}
			if seed == 1 {
				// run.log holds what the terminal showed: phases and the summary.
				b, err := os.ReadFile(filepath.Join(cfg.Out, "run.log"))
				if err != nil || !strings.Contains(string(b), "] check") || !strings.Contains(string(b), o.Summary) {
					t.Fatalf("run.log lacks the phases or the summary (%v):\n%s", err, b)
				}
				checkInBrowser(t, cfg.Out)
			}
		})
	}
}

func TestScenariosShowTheirLesson(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario string
		mutate   func(*Config)
		exit     int
	}{
		{"failover-race", nil, 1},
		{"failover-race", func(c *Config) { c.Fence = "none"; c.Seed = 2 }, 1},
		{"paused-client", func(c *Config) { c.Fence = "none" }, 1},
		{"paused-client", func(c *Config) { c.Recipe = "unsafe"; c.Fence = "none" }, 1},
		// A starved watchdog: the holder works on past its lease.
		{"starved-renewals", func(c *Config) { c.Fence = "none" }, 1},
		// A release that ran, its reply lost: unknown, never a definite
		// "no effect" (redislock's retried release once was).
		{"dropped-release-reply", func(c *Config) { c.Recipe = "redislock" }, 0},
		{"cancelled-calls", nil, 0},
		{"clock-jump", nil, 1},
		// A promoted replica judges PXAT times by its own clock: ahead, it
		// grants again; behind, locks only live longer.
		{"skewed-replica", nil, 1},
		{"skewed-replica-behind", nil, 0},
		// The 8.1 replica is promoted: DELIFEQ is unknown there, and the
		// checker puts the failed releases down to the version.
		{"rolling-upgrade", nil, -1},
	}
	for _, tt := range tests {
		cfg := config(t, tt.scenario, tt.mutate)
		t.Run(fmt.Sprintf("%s/%s/fence-%s", tt.scenario, cfg.Recipe, cfg.Fence), func(t *testing.T) {
			testslot.Parallel(t)
			o, r := runAndLoad(t, cfg)
			if !Reproduced(cfg, r) {
				t.Fatalf("the run did not show the %s lesson: %q\n%s\n%s", tt.scenario, Unmet(cfg, r), o.Summary, unexplained(cfg.Out, r))
			}
			want := tt.exit
			if want < 0 { // the verdict may go either way: the exit code must follow it
				want = exitcode.Valid
				if r.Valid == checker.Invalid {
					want = exitcode.Invalid
				}
			}
			if o.ExitCode != want {
				t.Fatalf("exit %d, want %d", o.ExitCode, want)
			}
			if tt.scenario == "failover-race" && cfg.Fence != "none" {
				checkInBrowser(t, cfg.Out)
				checkReportInBrowser(t, cfg.Out)
				checkShrinks(t, cfg.Out)
			}
		})
	}
}

// Ctrl-C stops the workload; what was recorded stays on disk and checks.
func TestInterruptedRunKeepsItsHistory(t *testing.T) {
	testslot.Parallel(t)
	cfg := config(t, "baseline", func(c *Config) { c.TimeLimit = 30 * time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Interrupt once the workload is under way.
		for i := 0; i < 600; i++ {
			if st, err := os.Stat(filepath.Join(cfg.Out, "history.jsonl")); err == nil && st.Size() > 50_000 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	o := Run(ctx, cfg, testLog{t})
	if o.ExitCode != exitcode.Crashed || o.Err == nil {
		t.Fatalf("interrupted run: exit %d, err %v; want exit 255 with the reason", o.ExitCode, o.Err)
	}
	if time.Since(start) > 25*time.Second {
		t.Fatalf("interrupt took effect only after %v", time.Since(start))
	}
	assertNoProcessesLeft(t, cfg.Out)
	if _, code, err := CheckDir(cfg.Out); err != nil || code != 0 {
		t.Fatalf("re-check of the interrupted run: exit %d, %v", code, err)
	}
}

// unexplained prints, for the first violation no injected fault explains, every
// event of its tokens and what the nemesis did from 3 s before it: the run
// folder is a TempDir, gone when the test ends, and a CI log is all that is
// left of a failure on a machine that is thrown away. Seen once in 3 CI runs:
// paused-client with native SET NX PX granted a lock while the previous
// holder's lease was certainly alive, no fault in force.
func unexplained(out string, r *checker.Result) string {
	var v *checker.Violation
	for i := range r.Violations {
		if c := r.Violations[i].Cause; r.Violations[i].Affects == "lock" && (c == "" || c == "none") {
			v = &r.Violations[i]
			break
		}
	}
	if v == nil {
		return ""
	}
	events, err := history.ReadFile(filepath.Join(out, "history.jsonl"))
	if err != nil || len(events) == 0 {
		return fmt.Sprintf("(no history: %v)", err)
	}
	var b strings.Builder
	// The run's own warnings (a wall-clock step, a cluster that did not
	// settle) may be the explanation.
	if log, err := os.ReadFile(filepath.Join(out, "run.log")); err == nil {
		for _, l := range strings.Split(string(log), "\n") {
			if strings.HasPrefix(l, "warning:") {
				fmt.Fprintf(&b, "run.log: %s\n", l)
			}
		}
	}
	fmt.Fprintf(&b, "events of the unexplained %s on %s at %.3f s (times in s from the first event):\n", v.Kind, v.Key, v.StartS)
	first := events[0].Time
	tokens := map[string]bool{}
	for _, tok := range v.Tokens {
		tokens[tok] = true
	}
	for _, e := range events {
		if tokens[e.Token] || e.Process == history.Nemesis && e.Time >= v.Start-3e9 && e.Time <= v.End+1e9 {
			fmt.Fprintf(&b, "  %8.3f  %-8s client %d %s %s %s token %.8s %s %s%s\n", float64(e.Time-first)/1e9, e.Process, e.Client, e.Type, e.F, e.Key, e.Token, e.Node, e.Error, e.Detail)
		}
	}
	return b.String()
}
