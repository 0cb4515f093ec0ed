package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/resource"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/sweep"
)

// Bad values the kinds share.
const (
	// nopePath can be neither created nor read: /proc takes no new entries.
	nopePath = "/proc/lockjepsen-nope/x"
	// hugeNumber is past int64 (and so past every count and port).
	hugeNumber = "99999999999999999999"
)

// flagCaseTimeout is how long a refused command may take. A bad value is
// refused at flag time, in milliseconds; one that starts something (a
// server, a sweep) is still running when it ends, and fails.
const flagCaseTimeout = 5 * time.Second

// commandFlags is one flag set of a command: the words that reach it (run,
// cluster up) and the set.
type commandFlags struct {
	path []string
	fs   *flag.FlagSet
}

// everyFlagSet collects the flag set of every registered command and of
// each of its subcommands through inspectFlags: the command runs up to its
// flag parsing and stops there, having started nothing.
func everyFlagSet(t *testing.T) []commandFlags {
	t.Helper()
	var got *flag.FlagSet
	inspectFlags = func(fs *flag.FlagSet) { got = fs }
	defer func() { inspectFlags = nil }()
	// A command with subcommands called bare prints its usage: not wanted
	// in the test's output.
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = devnull, devnull
	defer func() { os.Stdout, os.Stderr = stdout, stderr }()

	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []commandFlags
	for _, n := range names {
		c := commands[n]
		got = nil
		c.run(nil)
		switch {
		case got != nil:
			out = append(out, commandFlags{[]string{n}, got})
		case len(c.subcommands) == 0:
			t.Errorf("command %s reached no flag set: a command with subcommands must list them in its registration (command.subcommands), so that their flags are tried", n)
		}
		for _, s := range c.subcommands {
			got = nil
			c.run([]string{s})
			if got == nil {
				t.Errorf("%s %s reached no flag set", n, s)
				continue
			}
			out = append(out, commandFlags{[]string{n, s}, got})
		}
	}
	return out
}

// badValues are the values a flag of this kind must refuse: empty,
// negative, zero where a count is needed, huge, a wrong unit, a wrong type,
// an unknown name, a path that cannot be created or read. The kind is the
// flag's own Value, so a new flag of a known kind gets its values unasked;
// one of an unknown kind gets the generic ones.
func badValues(f *flag.Flag) []string {
	var v []string
	switch x := f.Value.(type) {
	case knob.Int:
		v = []string{"", "x", "1.5", "3s", hugeNumber}
		if x.Min > math.MinInt {
			v = append(v, strconv.Itoa(x.Min-1))
		}
		if x.Max < math.MaxInt {
			v = append(v, strconv.Itoa(x.Max+1))
		}
	case knob.Duration:
		// 1e300 seconds and NaN are numbers ParseFloat reads: as durations
		// they are out of range.
		v = []string{"", "x", "5mb", "99999999999h", "1e300", "NaN", "-Inf"}
		if x.Min >= 0 {
			v = append(v, "-1s")
		}
		if x.Min > 0 {
			v = append(v, (x.Min * 9 / 10).String())
		}
		if x.Max > 0 {
			v = append(v, (x.Max + time.Millisecond).String())
		}
	case knob.Choice:
		v = []string{"", "nope", strings.ToUpper(x.Among[0]), nopePath}
	case *knob.Parsed[knob.Wait]:
		v = []string{"", "1", "x:100ms", "-1:100ms", "1:-100ms", "1:100ms:1", hugeNumber + ":100ms", "1:" + hugeNumber, "9:100ms", "1:5apples"}
	case *knob.Parsed[knob.WaitAOF]:
		v = []string{"", "1:1", "2:1:100ms", "x:1:100ms", "0:-1:100ms", "0:1:-1ms", "0:" + hugeNumber + ":1ms", "0:9:100ms"}
	case *knob.Parsed[knob.MinReplicas]:
		v = []string{"", "x", "1", "-1:10", "1:-1", "1:10:1", hugeNumber + ":10", "1:" + hugeNumber, "9:10", "1:10ms"}
	case *knob.Parsed[int64]: // a memory size (knob.ParseBytes)
		v = []string{"", "-1mb", "lots", "1tb", "99999999999gb", "1.5mb", "1mb"}
	case recipeFlag:
		v = []string{"", "nope", "exec:", "exec:" + nopePath, "exec:/etc/passwd"}
	case execArgsFlag:
		v = []string{"", "x"}
	case *multiFlag, *listFlag:
		v = []string{"", "x", "x=nope", nopePath}
	default:
		switch fmt.Sprintf("%T", f.Value) {
		case "*flag.boolValue":
			v = []string{"", "x", "2", "yes"}
		case "*flag.int64Value", "*flag.intValue":
			v = []string{"", "x", "1.5", hugeNumber, "-1"}
		case "*flag.float64Value":
			v = []string{"", "x", "-1", "NaN", "Inf", "1e309"}
		case "*flag.durationValue":
			v = []string{"", "x", "-1s", "5mb", "99999999999h"}
		case "*flag.stringValue":
			v = []string{"", nopePath}
		default: // flag.Func and any Value of a kind not above
			v = []string{"", "-1", hugeNumber, nopePath}
		}
	}
	slices.Sort(v)
	return slices.Compact(v)
}

// flagAccepts are the bad values a flag takes on purpose, each with the
// reason; the test runs none of them (each would start what it asks for)
// and fails on an entry that matches no case, so the list cannot go stale.
// Keyed "command --flag value".
var flagAccepts = map[string]string{
	"run --out ":                        "empty --out is the default, results/<timestamp>-<scenario>",
	"bench scenario --out ":             "empty --out is the default, as run's",
	"bench locks --cpuprofile ":         "empty --cpuprofile writes no profile (the default)",
	"run --seed -1":                     "every int64 is a seed",
	"bench scenario --seed -1":          "every int64 is a seed",
	"sweep --seed -1":                   "every int64 is a seed",
	"run --faults ":                     "empty --faults is no faults, as 'none'",
	"bench scenario --faults ":          "empty --faults is no faults, as 'none'",
	"run --wait ":                       "empty --wait is off",
	"bench scenario --wait ":            "empty --wait is off",
	"run --waitaof ":                    "empty --waitaof is off",
	"bench scenario --waitaof ":         "empty --waitaof is off",
	"run --min-replicas ":               "empty --min-replicas is off, Valkey's default lag",
	"bench scenario --min-replicas ":    "empty --min-replicas is off, Valkey's default lag",
	"cluster up --min-replicas ":        "empty --min-replicas is off, Valkey's default lag",
	"bench cluster --min-replicas ":     "empty --min-replicas is off, Valkey's default lag",
	"run --resource-dsn ":               "empty --resource-dsn is the default, SQLite in the run folder",
	"bench scenario --resource-dsn ":    "empty --resource-dsn is the default, SQLite in the run folder",
	"resource serve --resource-dsn ":    "empty --resource-dsn is the default, SQLite (--db)",
	"resource export --resource-dsn ":   "empty --resource-dsn is the default, SQLite (--db)",
	"resource serve --schema ":          "empty --schema is the DSN's search_path",
	"resource export --schema ":         "empty --schema is the DSN's search_path",
	"resource serve --ready-file ":      "empty --ready-file writes none",
	"resource serve --run ":             "empty --run creates no row up front",
	"resource serve --run x":            "any word names a run's row",
	"resource serve --run x=nope":       "any word names a run's row",
	"resource serve --run " + nopePath:  "any word names a run's row",
	"resource export --run ":            "empty --run exports every run",
	"resource export --run " + nopePath: "any word names a run's row (none match: an empty export)",
	"resource export --addr ":           "empty --addr exports from --db instead of a service",
	"shrink --out ":                     "empty --out is the default, DIR-shrunk",
	"shrink --kind ":                    "empty --kind is the first violation's",
	"shrink --key ":                     "empty --key is the first violation's",
	"sweep --out ":                      "empty --out is the default, results/<timestamp>-sweep",
	"sweep --resume ":                   "empty --resume starts a new sweep",
	"sweep --file ":                     "empty --file: the flags make the plan",
	"sweep --shard ":                    "empty --shard runs every trial",
	"sweep merge --out ":                "empty --out is the default, results/<timestamp>-sweep",
	"sweep evidence --cells ":           "empty --cells is every red cell",
	"sweep --metrics-addr ":             "empty --metrics-addr serves no metrics",
	"run --metrics-addr ":               "empty --metrics-addr serves no metrics",
	"check --epsilon -Inf":              "check takes any epsilon and warns of what it cannot see (an old run is re-checked, not refused)",
	"lab --capture ":                    "empty --capture rewrites no page",
	"lab --cluster-dir " + nopePath:     "lab 1 uses a private topology when none answers in --cluster-dir",
	"client-test --exec-arg ":           "any text is an argument of the program",
	"client-test --exec-arg x":          "any text is an argument of the program",
}

// flagCase is one bad input: a command line, the environment it adds, and
// the name its message must say.
type flagCase struct {
	args []string
	env  []string
	name string // the flag or the variable the message must name
	key  string // "command --flag value", flagAccepts' key; "" for the environment's cases
	// probe: the input can only be judged by starting the program it names
	// (valkey-server --version), so that process is expected.
	probe bool
}

// TestEveryFlagRefusesBadValues gives every flag of every registered command
// (walked from the flag sets, so a new flag is covered without editing this
// test) the bad values of its kind, and the environment variables lockjepsen
// reads bad values too. Each must exit 254 with a message naming the flag or
// variable, before any process starts (Valkey, etcd and docker are stubs
// here that record being started) and before a banner; none may panic or
// run past flagCaseTimeout.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	fixtures := t.TempDir()
	stubs := filepath.Join(fixtures, "stubs")
	started := filepath.Join(fixtures, "started.log")
	// Every program a command could start records itself and fails: a bad
	// value that gets as far as looking for Valkey is caught, and nothing
	// real starts even then.
	writeStubs(t, stubs, "#!/bin/sh\necho \"$0 $*\" >> "+started+"\nexit 1\n",
		"valkey-server", "valkey-sentinel", "valkey-cli", "valkey-benchmark", "etcd", "etcdctl", "docker")
	env := []string{"PATH=" + stubs, "LOCKJEPSEN_VALKEY_BIN=" + stubs, "LOCKJEPSEN_ETCD_BIN=" + filepath.Join(stubs, "etcd"),
		"LOCKJEPSEN_CACHE=" + filepath.Join(fixtures, "no-cache"), "CI=1"}

	oneGrant := filepath.Join(fixtures, "one-grant")
	os.MkdirAll(oneGrant, 0o755)
	os.WriteFile(filepath.Join(oneGrant, "history.jsonl"), []byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}`+"\n"+`{"index":1,"time":6,"process":0,"type":"ok","f":"acquire","key":"k","token":"t"}`+"\n"), 0o644)
	shard, sweepDir := filepath.Join(fixtures, "shard"), filepath.Join(fixtures, "sweep")
	plan := sweep.Plan{Scenario: "failover-race", Configs: []sweep.Config{{Name: "none"}}, Faults: []sweep.Fault{{Name: "cut", Faults: []string{"cut-replication"}}}}
	plan.Defaults()
	if err := sweep.Start(sweepDir, plan); err != nil {
		t.Fatal(err)
	}
	// sweep join reads the sweep's report.
	if rep, err := sweep.Aggregate(sweepDir); err != nil {
		t.Fatal(err)
	} else if err := runfolder.WriteJSON(filepath.Join(sweepDir, sweep.ReportJSON), rep); err != nil {
		t.Fatal(err)
	}
	plan.Shard = &sweep.Shard{Index: 0, Count: 2}
	if err := sweep.Start(shard, plan); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(fixtures, "resource.db")
	st, err := resource.Open(context.Background(), resource.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// What a command needs besides the flag to get as far as judging it:
	// its flags before, its arguments after. The flag under test comes last
	// among the flags, so it wins over a base flag of the same name.
	base := map[string][2][]string{
		"check":           {nil, {oneGrant}},
		"shrink":          {nil, {oneGrant}},
		"client-test":     {nil, {"/bin/true"}},
		"lab":             {nil, {"1"}},
		"sweep merge":     {nil, {shard}},
		"sweep join":      {{"--out", filepath.Join(fixtures, "joined")}, {sweepDir}},
		"sweep evidence":  {nil, {sweepDir}},
		"resource export": {{"--db", db}, nil},
	}

	var cases []flagCase
	flags, values, aliases := 0, 0, 0
	for _, cf := range everyFlagSet(t) {
		path := strings.Join(cf.path, " ")
		cf.fs.VisitAll(func(f *flag.Flag) {
			// An old spelling (alias) shares its Value, and so its Set and
			// its checks, with the flag it names, which gets the values.
			if target, ok := strings.CutPrefix(f.Usage, hiddenPrefix); ok {
				if cf.fs.Lookup(target) != nil { // alias() registers the same Value
					aliases++
					return
				}
			}
			flags++
			for _, v := range badValues(f) {
				values++
				arg := []string{"--" + f.Name, v}
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					arg = []string{"--" + f.Name + "=" + v}
				}
				args := append(append(append(slices.Clone(cf.path), base[path][0]...), arg...), base[path][1]...)
				cases = append(cases, flagCase{args: args, name: f.Name, key: path + " --" + f.Name + " " + v})
			}
		})
	}
	nonValkey, oldServer := filepath.Join(fixtures, "not-valkey"), filepath.Join(fixtures, "old-server")
	writeStubs(t, nonValkey, "#!/bin/sh\necho hello\n", "valkey-server")
	writeStubs(t, oldServer, "#!/bin/sh\necho 'Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1'\n", "valkey-server")
	for _, args := range [][]string{{"run", "--scenario", "baseline"}, {"cluster", "up", "--dir", "c"}, {"client-test", "/bin/true"}, {"bench", "locks"}} {
		for _, bad := range []struct {
			dir   string
			probe bool
		}{{filepath.Join(fixtures, "no-such-dir"), false}, {nonValkey, true}, {oldServer, true}} {
			cases = append(cases, flagCase{args: args, env: []string{"LOCKJEPSEN_VALKEY_BIN=" + bad.dir}, name: "LOCKJEPSEN_VALKEY_BIN", probe: bad.probe})
		}
	}
	for _, idx := range []string{"", "3", "-1", "x", hugeNumber} {
		cases = append(cases, flagCase{args: []string{"sweep", "--shard", "/3"}, env: []string{"JOB_COMPLETION_INDEX=" + idx}, name: "JOB_COMPLETION_INDEX"})
	}
	// What the flags alone say the server cannot run, and a database
	// nothing answers: refused before anything starts too.
	cases = append(cases,
		flagCase{args: []string{"run", "--valkey-build", "nolua", "--recipe", "lua"}, name: "valkey-build"},
		flagCase{args: []string{"run", "--valkey-build", "nolua", "--recipe", "redsync", "--fence", "none"}, name: "valkey-build"},
		flagCase{args: []string{"run", "--resource-dsn", "postgres://lockjepsen@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}, name: "resource-dsn"},
		// The network faults act on the proxies, which run in this
		// process in front of Sentinel's, Redlock's and a cluster's nodes.
		flagCase{args: []string{"run", "--scenario", "baseline", "--faults", "net-latency", "--interval", "3s"}, name: "net-proxy"},
		flagCase{args: []string{"run", "--scenario", "net-timeout", "--net-proxy=false"}, name: "net-proxy"},
		flagCase{args: []string{"run", "--scenario", "baseline", "--faults-at", "4s:net-reset"}, name: "net-proxy"},
		flagCase{args: []string{"run", "--scenario", "net-baseline", "--topology", "standalone", "--runtime", "docker"}, name: "runtime"},
		flagCase{args: []string{"bench", "scenario", "--scenario", "net-latency", "--topology", "etcd", "--recipe", "etcd-mutex"}, name: "net-proxy"},
		// The replication path alone: Redlock has no replication to slow.
		// (An exec adapter is asked at its probe whether it dials through
		// the dial map: lock.TestExecInit.)
		flagCase{args: []string{"run", "--scenario", "net-slow-replication", "--topology", "redlock", "--recipe", "redlock", "--fence", "none"}, name: "topology"},
		// Sizes the flags alone accept but the run refuses.
		flagCase{args: []string{"run", "--scenario", "net-latency", "--net-latency", "30s"}, name: "net-latency"},
		flagCase{args: []string{"run", "--scenario", "net-latency", "--net-latency", "100ms", "--net-jitter", "150ms"}, name: "net-jitter"})
	// Every parameter of every fault the catalogs list, generated from them
	// so that a new fault is walked too: the sweep's named faults and any
	// nemesis fault by its own name take duration= and interval=.
	faultValues := 0
	for _, name := range faultNames(t) {
		for _, v := range faultParamBadValues(t, name) {
			faultValues++
			cases = append(cases, flagCase{args: []string{"sweep", "--faults", v}, name: "faults", key: "sweep --faults " + v})
		}
	}
	t.Logf("%d flags of %d flag sets (%d old spellings share a flag's values), %d bad values in all; %d fault parameters; %d more cases (environment, server, database)",
		flags, len(everyFlagSet(t)), aliases, values, faultValues, len(cases)-values-faultValues)

	used := map[string]bool{}
	for _, c := range cases {
		if why, ok := flagAccepts[c.key]; ok {
			used[c.key] = true
			t.Logf("accepted on purpose, not run: %s (%s)", c.key, why)
			continue
		}
		t.Run(strings.Join(append(slices.Clone(c.env), c.args...), " "), func(t *testing.T) {
			runFlagCase(t, c, env, started)
		})
	}
	for key := range flagAccepts {
		if !used[key] {
			t.Errorf("flagAccepts names %q, which is no case: remove it", key)
		}
	}
}

func runFlagCase(t *testing.T, c flagCase, env []string, started string) {
	before := fileSize(started)
	ctx, cancel := context.WithTimeout(context.Background(), flagCaseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, c.args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(os.Environ(), env...), c.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String() + stderr.String()
	if ctx.Err() != nil {
		t.Fatalf("still running after %v: the value started something\n%s", flagCaseTimeout, out)
	}
	if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
		t.Fatalf("panicked:\n%s", out)
	}
	for _, banner := range []string{"lockjepsen run:", "lockjepsen sweep ->", "lockjepsen client-test:", "cluster ready", "resource serving"} {
		if strings.Contains(out, banner) {
			t.Fatalf("refused after its banner %q, or not refused:\n%s", banner, out)
		}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Fatalf("exit %v, want 254\n%s", err, out)
	}
	// A flag is named with its dash (-name as package flag says it, or
	// --name), so that "0 faults" does not pass for --faults.
	dash := "--?"
	if strings.ToUpper(c.name) == c.name {
		dash = "" // an environment variable
	}
	if !regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + dash + regexp.QuoteMeta(c.name) + `($|[^A-Za-z0-9_-])`).MatchString(stderr.String()) {
		t.Fatalf("the message does not name %s:\n%s", c.name, out)
	}
	if n := strings.Count(strings.TrimSpace(stderr.String()), "\n"); n > 0 {
		t.Errorf("want one line on stderr, got %d more:\n%s", n, out)
	}
	if !c.probe {
		if b, _ := os.ReadFile(started); int64(len(b)) > before {
			t.Errorf("refused only after starting %s", strings.TrimSpace(string(b[before:])))
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, 0); err == nil {
		t.Error("a process of the refused command outlived it")
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// writeStubs writes script as each of names in dir, executable.
func writeStubs(t *testing.T, dir, script string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// faultNames is every name `sweep --faults` takes: the sweep's catalog, then
// the nemesis faults by their own names.
func faultNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, f := range sweep.FaultCatalog {
		names = append(names, f.Name)
	}
	names = append(names, nemesis.Names()...)
	if len(names) < 2 {
		t.Fatal("the fault catalogs are empty")
	}
	return names
}

// faultParamBadValues is what no fault takes (a duration or an interval at
// or below 0, a word for a duration, a parameter no fault has) and, for a
// fault held for no time, a duration at all.
func faultParamBadValues(t *testing.T, name string) []string {
	t.Helper()
	vs := []string{name + ":duration=-1s", name + ":duration=0s", name + ":interval=0s", name + ":interval=soon", name + ":length=1s"}
	parts := []string{name}
	if f, err := sweep.LookupFault(name); err == nil {
		parts = f.Faults
		for _, ns := range f.ByBackend {
			parts = append(parts, ns...)
		}
	}
	for _, n := range parts {
		f, err := nemesis.Lookup(n)
		if err != nil {
			t.Fatalf("fault %s stands for %s: %v", name, n, err)
		}
		if f.Held() {
			return vs
		}
	}
	return append(vs, name+":duration=4s")
}
