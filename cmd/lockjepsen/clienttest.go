package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
)

func init() {
	register(command{name: "client-test", run: runClientTest,
		summary: "check your own lock client (a program speaking docs/protocol.md) against one Valkey before any fault"})
}

// recipeFlag is --recipe: a recipe name, or exec:PATH.
type recipeFlag struct{ s *string }

func (f recipeFlag) String() string {
	if f.s == nil {
		return ""
	}
	return *f.s
}

func (f recipeFlag) Set(v string) error {
	if _, err := lock.Lookup(v); err != nil {
		return err
	}
	*f.s = v
	return nil
}

// execArgsFlag is --exec-arg, repeatable: one argument of the exec program each.
type execArgsFlag struct{ args *[]string }

func (f execArgsFlag) String() string {
	if f.args == nil {
		return ""
	}
	return strings.Join(*f.args, " ")
}

func (f execArgsFlag) Set(v string) error { *f.args = append(*f.args, v); return nil }

// recipeUsage lists every recipe from lock's own table, so that a new one
// shows up in -h without editing this line.
var recipeUsage = "lock recipe: " + strings.Join(lock.Names(), ", ") + " (exec:PATH is your own client speaking docs/protocol.md; docs/recipes.md says which runs on which --topology)"

// runClientTest starts one Valkey primary watched by one Sentinel, starts
// the program with the environment a run gives it, and drives it through
// lock.ClientTest. Exit 0: every case passed; 1: some failed; 2: a protocol
// error, or the program or the server could not be started.
func runClientTest(args []string) int {
	fs := newFlagSet("client-test", "client-test [--exec-arg ARG]... PATH")
	var execArgs []string
	fs.Var(execArgsFlag{&execArgs}, "exec-arg", "an argument for the program (repeat for more)")
	opTimeout := 2 * time.Second
	fs.Var(knob.Duration{D: &opTimeout, Min: 100 * time.Millisecond}, "op-timeout", "an operation not answered by then is info (a failed case)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return fail("client-test: want one program, e.g. lockjepsen client-test examples/redis-py/adapter.py")
	}
	prog := strings.TrimPrefix(fs.Arg(0), lock.Exec+":")
	recipe := lock.Exec + ":" + prog
	if _, err := lock.Lookup(recipe); err != nil {
		return fail("client-test: %v", err)
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return fail("%v", err)
	}
	dir, err := os.MkdirTemp("", "lockjepsen-client-test-")
	if err != nil {
		return fail("client-test: %v", err)
	}
	defer os.RemoveAll(dir)
	ccfg := cluster.Defaults()
	ccfg.Dir, ccfg.Replicas, ccfg.Sentinels, ccfg.Quorum = dir, 0, 1, 1
	cl, err := cluster.NewLocal(ccfg, bins)
	if err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	uctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = cl.Up(uctx)
	cancel()
	defer cl.Down()
	if err != nil {
		return fail("client-test: Valkey up: %v", err)
	}
	lc := lock.Config{Recipe: recipe, ExecArgs: execArgs, Sentinels: cl.SentinelAddrs(), MasterSet: cluster.MasterName,
		TTL: 5 * time.Second, OpTimeout: opTimeout}
	fmt.Printf("lockjepsen client-test: %s against Valkey %s (1 primary, 1 Sentinel), protocol %d\n", prog, bins.Version, lock.ProtocolVersion)
	rep, err := lock.ClientTest(ctx, lc, os.Stdout)
	if err != nil {
		return fail("client-test: %v", err)
	}
	if rep.Protocol != nil {
		// A protocol error or the program's exit: bad input, exit 254.
		return fail("client-test: %v", rep.Protocol)
	}
	fmt.Printf("%d passed, %d failed; fences %s\n", rep.Passed, rep.Failed, map[bool]string{true: "returned (any --fence)", false: "not returned (--fence none)"}[rep.Fences])
	if rep.Failed > 0 {
		return exitInvalid
	}
	return exitValid
}
