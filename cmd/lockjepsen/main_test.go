package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockjepsen/lockjepsen/internal/testbin"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"

	"github.com/lockjepsen/lockjepsen/sweep"
)

var bin string

func TestMain(m *testing.M) { testbin.Main(m.Run, ".", &bin) }

// Bad input is refused before anything starts, with exit 254 and one line
// that names the flag (or the problem): no usage dump burying it, no
// goroutine dump, no run folder, no process left behind.
func TestBadInputExitsTwoAndNamesTheProblem(t *testing.T) {
	corrupt := t.TempDir()
	os.WriteFile(filepath.Join(corrupt, "history.jsonl"), []byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}`+"\n"+`{"index":1,"time":6,"process":0,"type":"maybe","f":"acquire"}`+"\n"), 0o644)
	busy := t.TempDir()
	os.WriteFile(filepath.Join(busy, "history.jsonl"), []byte("\n"), 0o644)
	oneGrant := t.TempDir()
	os.WriteFile(filepath.Join(oneGrant, "history.jsonl"), []byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}`+"\n"+`{"index":1,"time":6,"process":0,"type":"ok","f":"acquire","key":"k","token":"t"}`+"\n"), 0o644)
	configOnly := t.TempDir()
	os.WriteFile(filepath.Join(configOnly, "history.jsonl"), []byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(configOnly, "config.json"), []byte(`{"scenario":"failover-race"}`), 0o644)
	// A sweep folder whose trials are gone: --aggregate must refuse it and
	// keep the report it holds.
	emptySweep := t.TempDir()
	plan := sweep.Plan{Scenario: "failover-race", Configs: []sweep.Config{{Name: "none"}}, Faults: []sweep.Fault{{Name: "cut", Faults: []string{"cut-replication"}}}}
	plan.Defaults()
	if err := sweep.Start(emptySweep, plan); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(emptySweep, sweep.ReportJSON), []byte(`{"trials": 20}`), 0o644)
	// A sweep folder another sweep is running (here this test holds it):
	// a second --resume must refuse before it rewrites the plan or runs a trial.
	runningSweep := t.TempDir()
	if err := sweep.Start(runningSweep, plan); err != nil {
		t.Fatal(err)
	}
	release, err := sweep.Claim(runningSweep)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	type bad struct {
		args []string
		want string
	}
	comparison, _ := filepath.Abs("../../results/comparison")
	tests := []bad{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "--no-such-flag"}, "no-such-flag"},
		{[]string{"run", "--scenario", "meteor"}, `unknown scenario "meteor"`},
		// Before the banner, not after it with 255.
		{[]string{"run", "--scenario", "baseline", "--out", "/proc/lockjepsen-nope/run"}, "--out /proc/lockjepsen-nope/run cannot be created"},
		{[]string{"run", "--recipe", "redsync"}, "--fence none"},
		{[]string{"run", "--waitaof", "1:1:100ms"}, "--appendonly"},
		{[]string{"run", "--wait", "3:100ms"}, "--replicas"},
		{[]string{"run", "--faults", "partition"}, "docker"},
		// A sweep's fault parameter given to a run: the fix names the fault.
		{[]string{"run", "--faults", "pause-primary:duration=4s"}, `"duration=4s" is a sweep's fault parameter: give --faults pause-primary`},
		{[]string{"run", "--faults", "meteor:duration=4s"}, `unknown fault "meteor"`},
		{[]string{"run", "--maxmemory", "lots"}, "no memory size"},
		{[]string{"run", "--maxmemory", "1mb"}, "want at least"},
		{[]string{"run", "--maxmemory", "16mb", "--maxmemory-policy", "evict-everything"}, "volatile-ttl"},
		{[]string{"run", "--maxmemory-policy", "volatile-ttl"}, "add --maxmemory"},
		{[]string{"run", "--faults", "memory-pressure"}, "add --maxmemory"},
		{[]string{"run", "--scenario", "etcd-leader-failover", "--maxmemory", "16mb"}, "Valkey knobs"},
		{[]string{"run", "--topology", "standalone", "--faults", "kill-primary"}, "needs --topology sentinel"},
		// ... and the way on: the fault's counterpart there, or the targets it has.
		{[]string{"run", "--topology", "zookeeper", "--recipe", "zk-lock", "--faults", "kill-primary"}, "needs --topology sentinel (this run uses zookeeper): on zookeeper its counterpart is kill-leader (zk-kill-leader)"},
		{[]string{"run", "--topology", "etcd", "--recipe", "etcd-mutex"}, "the cut-replication fault needs --topology sentinel (this run uses etcd): on etcd give a fault over a target, kill-leader (etcd-kill-leader), pause-leader (etcd-pause-leader)"},
		// A deployment given to the default scenario: its own scenarios are named.
		{[]string{"run", "--topology", "zookeeper"}, "on zookeeper use exec, zk-lock (or start from a scenario made for --topology zookeeper: --scenario zk-kill-leader, "},
		// A deployment's own flag on another deployment would change nothing.
		{[]string{"run", "--topology", "sentinel", "--shards", "5"}, "--shards 5: it is an option of --topology cluster, and this run uses sentinel; drop --shards or use --topology cluster"},
		{[]string{"run", "--scenario", "etcd-leader-failover", "--nodes", "3"}, "--nodes 3: it is an option of --topology redlock, and this run uses etcd"},
		{[]string{"run", "--topology", "redlock", "--members", "5"}, "--members 5: it is an option of --topology etcd or zookeeper, and this run uses redlock"},
		{[]string{"client-test", "--topology", "sentinel", "--pooler", "session", "examples/redis-py/adapter.py"}, "--pooler session: it is an option of --topology postgres"},
		{[]string{"run", "--topology", "cluster", "--shards", "2"}, "2 is out of range: want 3 to 9"},
		{[]string{"run", "--topology", "cluster", "--sentinels", "5", "--faults", "none"}, "--sentinels 5: it is an option of --topology sentinel, and this run uses cluster"},
		{[]string{"run", "--topology", "sentinel", "--faults", "promote-replica"}, "needs --topology standalone"},
		// A fault over a target the deployment lacks: the targets it has.
		{[]string{"run", "--topology", "redlock", "--recipe", "redlock", "--fence", "none", "--faults", "kill-leader"}, "the kill-leader fault has no target on --topology redlock: it is kill-primary on sentinel; etcd-kill-leader on etcd; cluster-kill-primary on cluster; zk-kill-leader on zookeeper; on redlock give kill-one (kill-node), pause-one (pause-node), clock-bump-one (clock-bump-node)"},
		{[]string{"run", "--scenario", "etcd-leader-failover", "--faults-at", "3s:partition-leader"}, "--faults-at: the etcd-partition-member fault needs --runtime docker"},
		{[]string{"run", "--faults", "kill-everything"}, "over a target, on any deployment that has it: kill-leader, pause-leader"},
		{[]string{"run", "--faults", "migrate-slot"}, "the migrate-slot fault needs --topology cluster (this run uses sentinel)"},
		{[]string{"run", "--topology", "standalone", "--faults", "migrate-slot-atomic"}, "the migrate-slot-atomic fault needs --topology cluster"},
		{[]string{"run", "--faults-at", "3s:migrate-slot"}, "--faults-at: the migrate-slot fault needs --topology cluster"},
		{[]string{"run", "--topology", "standalone", "--runtime", "docker"}, "--runtime local"},
		{[]string{"run", "--scenario", "partition", "--runtime", "local"}, "--runtime docker"},
		{[]string{"run", "--scenario", "redlock-partition-minority", "--runtime", "local"}, "--runtime docker"},
		{[]string{"run", "--scenario", "etcd-partition-member", "--runtime", "local"}, "--runtime docker"},
		{[]string{"run", "--scenario", "redlock-baseline", "--faults", "partition-minority", "--interval", "5s", "--runtime", "local"}, "--runtime docker"},
		{[]string{"run", "--replicas", "0"}, "--replicas 1 or more"},
		{[]string{"run", "--keys", "100", "--clients", "2"}, "--keys"},
		{[]string{"run", "--epsilon", "3s"}, "--epsilon"},
		{[]string{"run", "--time-limit", "6s"}, "--time-limit"},
		{[]string{"run", "--out", busy}, "already holds a run"},
		{[]string{"run", "extra-arg"}, "unexpected argument"},
		// --faults-at: each bad value refused before the banner, naming it.
		{[]string{"run", "--faults-at", "3s-cut-replication"}, "want OFFSET:FAULT"},
		{[]string{"run", "--faults-at", "soon:cut-replication"}, `offset "soon" is not a duration`},
		{[]string{"run", "--faults-at", "3s:meteor"}, `unknown fault "meteor"`},
		{[]string{"run", "--faults-at", "3s:redlock-clock-jump"}, "--faults-at: the redlock-clock-jump fault needs --topology redlock"},
		{[]string{"run", "--faults-at", "3s:partition"}, "--faults-at: the partition fault needs --runtime docker"},
		{[]string{"run", "--faults-at", "1s:cut-replication"}, "before the 3s warm-up"},
		{[]string{"run", "--faults-at", "40s:cut-replication"}, "past --time-limit 25s"},
		{[]string{"run", "--faults-at", "20s:cut-replication"}, "use --time-limit 28s or more"},
		{[]string{"run", "--faults-at", "3s:cut-replication,6s:kill-primary"}, "fires before 3s:cut-replication has run its course"},
		{[]string{"run", "--faults-at", "3s:cut-replication", "--faults", "kill-primary"}, "--faults and --faults-at both given"},
		{[]string{"bench", "scenario", "--faults-at", "1s:cut-replication"}, "before the 3s warm-up"},
		{[]string{"sweep", "publish", "results/comparison"}, "want --to ROW-DIR and one sweep folder"},
		{[]string{"sweep", "publish", "--to", t.TempDir(), t.TempDir()}, "holds no sweep.json"},
		{[]string{"sweep", "publish", "--to", comparison + "/", comparison}, "is the sweep's own folder"},
		{[]string{"cluster", "up", "--min-replicas-to-write", "3"}, "--min-replicas-to-write"},
		{[]string{"cluster", "up", "extra"}, "unexpected argument"},
		{[]string{"cluster", "status", "--dir", t.TempDir()}, "no cluster"},
		{[]string{"cluster", "frob"}, "unknown subcommand"},
		{[]string{"check", filepath.Join(t.TempDir(), "missing")}, "not a run directory"},
		{[]string{"check", corrupt}, "history.jsonl:2"},
		{[]string{"check"}, "one run directory"},
		{[]string{"check", "a", "b"}, "one run directory"},
		{[]string{"check", filepath.Join(t.TempDir(), "missing"), "--budget", "1s"}, "not a run directory"},
		{[]string{"sweep", "--resume", emptySweep, "--aggregate"}, emptySweep + " holds no trial folders"},
		{[]string{"sweep", "--resume", runningSweep, "--parallel", "2"}, runningSweep + " is being run by another sweep (pid"},
		{[]string{"shrink"}, "one run directory"},
		{[]string{"shrink", filepath.Join(t.TempDir(), "missing")}, "not a run directory"},
		{[]string{"shrink", corrupt}, "history.jsonl:2"},
		{[]string{"shrink", "--kind", "meteor", oneGrant}, "--kind \"meteor\""},
		{[]string{"shrink", oneGrant, "--key", "lock:{nope}"}, "--key \"lock:{nope}\" is not in"},
		{[]string{"shrink", oneGrant, "--out", corrupt}, "not empty"},
		{[]string{"shrink", oneGrant, "--out", oneGrant}, "the run itself"},
		{[]string{"shrink", "--rerun", oneGrant, "--out", filepath.Join(t.TempDir(), "r")}, "has no readable config.json"},
		{[]string{"shrink", "--rerun", configOnly, "--out", filepath.Join(t.TempDir(), "r")}, "results.json"},
		{[]string{"shrink", "--seeds", "3", oneGrant}, "--seeds and --min are for --rerun"},
		{[]string{"shrink", "--rerun", "--min", "6", oneGrant}, "--min 6 of --seeds 5 can never hold"},
		{[]string{"check", "--budget", "x", corrupt}, "budget"},
		{[]string{"sweep", "--configs", "bogus"}, "bogus"},
		{[]string{"sweep", "--faults", "meteor"}, "meteor"},
		{[]string{"sweep", "--faults", "partition"}, "docker"},
		{[]string{"sweep", "--aggregate"}, "--resume"},
		{[]string{"sweep", "--resume", t.TempDir()}, "plan.json"},
		{[]string{"sweep", "--resume", t.TempDir(), "--trials", "3"}, "--trials"},
		{[]string{"sweep", "--config", "x"}, "--config"},
		{[]string{"bench", "frob"}, "bench"},
		{[]string{"bench", "locks", "--recipe", "redsync", "--fencing"}, "--fence-tokens"},
		{[]string{"bench", "locks", "--recipe", "redsync", "--fence-tokens"}, "--fence-tokens"},
		{[]string{"resource", "serve", "--fence", "sometimes"}, "fence"},
		{[]string{"resource", "serve", "--mode", "sometimes"}, "mode"},
		{[]string{"resource", "serve", "--db", "x.db", "--resource-dsn", "postgres://x"}, "--resource-dsn"},
		{[]string{"bench", "locks", "extra"}, "unexpected argument"},
		{[]string{"bench", "locks", "--cpuprofile", "/nonexistent/profiles"}, "mkdir -p"},
		{[]string{"bench", "cluster", "--min-replicas-to-write", "3"}, "--min-replicas-to-write"},
		{[]string{"bench", "scenario", "--recipe", "redsync"}, "--fence none"},
		{[]string{"lab", "99"}, "99"},
		{[]string{"lab", "x"}, "not a lab number"},
		{[]string{"lab", "1", "2"}, "one lab at a time"},
	}
	// Every bad value of every typed flag: the message names the flag.
	for _, f := range []struct {
		cmd   []string
		flag  string
		value []string
	}{
		{[]string{"run"}, "fence", []string{"sometimes"}},
		{[]string{"run"}, "recipe", []string{"paxos"}},
		{[]string{"run"}, "clients", []string{"0", "257", "x"}},
		{[]string{"run"}, "keys", []string{"0", "x"}},
		{[]string{"run"}, "ttl", []string{"1ms", "0", "-1s", "x"}},
		{[]string{"run"}, "time-limit", []string{"1s", "x"}},
		{[]string{"run"}, "seed", []string{"x"}},
		{[]string{"run"}, "faults", []string{"meteor"}},
		{[]string{"run"}, "interval", []string{"-1s", "0", "x"}},
		{[]string{"run"}, "wait", []string{"1", "x:100ms", "1:-5"}},
		{[]string{"run"}, "waitaof", []string{"1:1", "2:1:100ms"}},
		{[]string{"run"}, "min-replicas", []string{"x:y", "1"}},
		{[]string{"run"}, "appendfsync", []string{"sometimes"}},
		{[]string{"run"}, "replicas", []string{"-1", "9"}},
		{[]string{"run"}, "sentinels", []string{"0", "8"}},
		{[]string{"run"}, "down-after", []string{"0s", "10ms"}},
		{[]string{"run"}, "steps", []string{"0"}},
		{[]string{"run"}, "think", []string{"-1s"}},
		{[]string{"run"}, "idle", []string{"-1s", "x"}},
		{[]string{"run"}, "epsilon", []string{"-1s"}},
		{[]string{"run"}, "runtime", []string{"k8s"}},
		{[]string{"run"}, "metrics-addr", []string{"bogus", "127.0.0.1", "127.0.0.1:99999"}},
		{[]string{"sweep"}, "metrics-addr", []string{"x:y:z"}},
		{[]string{"bench", "scenario"}, "seeds", []string{"0", "x"}},
		{[]string{"shrink"}, "seeds", []string{"0", "101", "x"}},
		{[]string{"shrink"}, "min", []string{"0", "x"}},
		{[]string{"bench", "locks"}, "clients", []string{"0"}},
		{[]string{"bench", "locks"}, "recipe", []string{"bogus"}},
		{[]string{"bench", "locks"}, "time-limit", []string{"0", "x"}},
		{[]string{"bench", "locks"}, "requests", []string{"0"}},
		{[]string{"bench", "cluster"}, "trials", []string{"0"}},
		{[]string{"bench", "cluster"}, "runtime", []string{"k8s"}},
		{[]string{"cluster", "up"}, "replicas", []string{"9"}},
		{[]string{"cluster", "up"}, "sentinels", []string{"0"}},
		{[]string{"cluster", "up"}, "down-after", []string{"10ms"}},
		{[]string{"cluster", "up"}, "failover-timeout", []string{"500ms"}},
		{[]string{"cluster", "up"}, "min-replicas", []string{"x"}},
		{[]string{"cluster", "up"}, "appendfsync", []string{"sometimes"}},
		{[]string{"cluster", "up"}, "base-port", []string{"80", "x"}},
		{[]string{"sweep"}, "trials", []string{"0"}},
		{[]string{"sweep"}, "parallel", []string{"0", "17"}},
		{[]string{"sweep"}, "time-limit", []string{"x"}},
		{[]string{"sweep"}, "min-failovers", []string{"-1"}},
		{[]string{"check"}, "epsilon", []string{"x"}},
	} {
		for _, v := range f.value {
			args := append(append([]string{}, f.cmd...), "--"+f.flag, v)
			if f.cmd[0] == "check" {
				args = append(args, corrupt)
			}
			tests = append(tests, bad{args, f.flag})
		}
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Dir = t.TempDir()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			out := stdout.String() + stderr.String()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != exitUsage {
				t.Fatalf("exit %v, want 254\n%s", err, out)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("message does not name %q:\n%s", tt.want, out)
			}
			if strings.Contains(stdout.String(), "lockjepsen run:") {
				t.Fatalf("refused after the run's banner:\n%s", out)
			}
			if n := strings.Count(strings.TrimSpace(stderr.String()), "\n"); n > 0 || strings.Contains(out, "goroutine") {
				t.Fatalf("want one line on stderr, got %d more:\n%s", n, out)
			}
			if _, err := os.Stat(filepath.Join(cmd.Dir, "results")); err == nil {
				t.Fatal("a refused command left a results folder behind")
			}
			// Nothing of the command's process group outlives it.
			if err := syscall.Kill(-cmd.Process.Pid, 0); err == nil {
				t.Fatal("a process of the refused command outlived it")
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(emptySweep, sweep.ReportJSON)); string(b) != `{"trials": 20}` {
		t.Errorf("sweep --aggregate of no trials rewrote sweep.json: %s", b)
	}
	if p, err := sweep.ReadPlan(runningSweep); err != nil || p.Parallel != plan.Parallel {
		t.Errorf("a refused --resume of a running sweep rewrote its plan: parallel %d, want %d (%v)", p.Parallel, plan.Parallel, err)
	}
}

func TestHelpListsEveryCommandAndExitsZero(t *testing.T) {
	out, err := exec.Command(bin, "help").CombinedOutput()
	if err != nil {
		t.Fatalf("help: %v\n%s", err, out)
	}
	for _, c := range []string{"run", "check", "cluster", "sweep", "bench", "resource"} {
		if !strings.Contains(string(out), "  "+c+" ") {
			t.Errorf("help does not list %s:\n%s", c, out)
		}
	}
	if strings.Contains(string(out), "  client ") {
		t.Error("help lists the hidden client subcommand")
	}
}

// Help is asked for: it goes to stdout with exit 0 and lists the command's
// flags, so `lockjepsen run -h | less` shows it.
func TestHelpOfEveryCommandOnStdout(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "-h"}, []string{"-scenario", "-ttl", "-fence", "failover-race"}},
		{[]string{"check", "-h"}, []string{"-epsilon", "-budget"}},
		{[]string{"sweep", "-h"}, []string{"-configs", "-faults", "-trials"}},
		{[]string{"bench", "-h"}, []string{"cluster", "locks", "scenario"}},
		{[]string{"bench", "cluster", "-h"}, []string{"-trials", "-runtime"}},
		{[]string{"bench", "locks", "-h"}, []string{"-clients", "-time-limit"}},
		{[]string{"bench", "scenario", "-h"}, []string{"-seeds", "-scenario"}},
		{[]string{"cluster", "up", "-h"}, []string{"-replicas", "-min-replicas"}},
		{[]string{"lab", "-h"}, []string{"-dir"}},
		{[]string{"version", "-h"}, []string{"version"}},
		{[]string{"resource", "serve", "-h"}, []string{"-fence", "-resource-dsn"}},
		{[]string{"--version"}, []string{"lockjepsen"}},
		{[]string{"help"}, []string{"run", "check"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			cmd := exec.Command(bin, tt.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not mention %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

// Every registered command, hidden ones too, answers -h on stdout with exit
// 0 and nothing on stderr: the table below names flags, this one covers a
// command added later without editing it (cluster and resource once printed
// their usage on stderr).
func TestHelpOfEveryRegisteredCommand(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			cmd := exec.Command(bin, name, "-h")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s -h: %v\nstdout: %s\nstderr: %s", name, err, stdout.String(), stderr.String())
			}
			if stdout.Len() == 0 || stderr.Len() != 0 {
				t.Errorf("%s -h: %d bytes on stdout, stderr %q; want the usage on stdout alone", name, stdout.Len(), stderr.String())
			}
		})
	}
}

// The defaults `run -h` shows are the chosen scenario's, not placeholders:
// the values config.json of such a run starts from (runner.FromScenario).
func TestRunHelpShowsTheScenarioDefaults(t *testing.T) {
	for _, name := range []string{"failover-race", "baseline", "paused-client", "redlock-clock-jump"} {
		sc, err := scenario.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := runner.FromScenario(sc)
		out, err := exec.Command(bin, "run", "--scenario", name, "-h").Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for flagName, want := range map[string]string{
			"ttl": cfg.TTL.String(), "time-limit": cfg.TimeLimit.String(), "clients": fmt.Sprint(cfg.Clients),
			"keys": fmt.Sprint(cfg.Keys), "recipe": cfg.Recipe, "fence": cfg.Fence, "steps": fmt.Sprint(cfg.Job.Steps),
		} {
			if got := helpDefault(string(out), flagName); got != want {
				t.Errorf("%s: -%s shows default %q, config.json would hold %q", name, flagName, got, want)
			}
		}
	}
}

// helpDefault reads "(default X)" of one flag from flag.PrintDefaults output.
func helpDefault(help, name string) string {
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "-"+name {
			continue
		}
		for j := i; j < len(lines) && j < i+3; j++ {
			if k := strings.Index(lines[j], "(default "); k >= 0 {
				return strings.Trim(strings.TrimSuffix(strings.TrimSpace(lines[j][k+len("(default "):]), ")"), `"`)
			}
		}
	}
	return ""
}

// Old spellings parse for one release, but help lists only the new names.
func TestOldSpellingsAreHiddenAliases(t *testing.T) {
	for _, tt := range []struct {
		cmd      []string
		old, new string
	}{
		{[]string{"resource", "serve"}, "-mode", "-fence"},
		{[]string{"resource", "serve"}, "-dsn ", "-resource-dsn"},
		{[]string{"bench", "locks"}, "-duration", "-time-limit"},
		{[]string{"bench", "locks"}, "-fencing", "-fence-tokens"},
		{[]string{"cluster", "up"}, "-min-replicas-to-write", "-min-replicas"},
	} {
		out, err := exec.Command(bin, append(append([]string{}, tt.cmd...), "-h")...).Output()
		if err != nil {
			t.Fatalf("%v -h: %v", tt.cmd, err)
		}
		if !strings.Contains(string(out), "  "+tt.new) || strings.Contains(string(out), "  "+tt.old) {
			t.Errorf("%v -h should list %s and hide %s:\n%s", tt.cmd, tt.new, tt.old, out)
		}
	}
}
