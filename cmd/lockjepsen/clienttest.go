package main

import (
	"context"
	"flag"
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
		summary: "check your own lock client (a program speaking docs/protocol.md) against any deployment (one Valkey and one Sentinel unless --topology says), before any fault"})
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

// runClientTest starts the deployment --topology names (one Valkey primary
// watched by one Sentinel by default), starts the program with the
// environment a run gives it, and drives it through lock.ClientTest. Exit 0:
// every case passed; 1: some failed; 254: a protocol error, or the program or
// the server could not be started.
func runClientTest(args []string) int {
	// Every deployment, each as small as its cases need: what the program
	// is handed is what a run hands it (the deployment's own endpoints).
	fs := newFlagSet("client-test", "client-test [--topology "+strings.Join(cluster.Topologies, "|")+"] [--exec-arg ARG]... PATH")
	var execArgs []string
	fs.Var(execArgsFlag{&execArgs}, "exec-arg", "an argument for the program (repeat for more)")
	opTimeout := 2 * time.Second
	fs.Var(knob.Duration{D: &opTimeout, Min: 100 * time.Millisecond}, "op-timeout", "an operation not answered by then is info (a failed case)")
	topology := cluster.DefaultTopology()
	fs.Var(knob.Choice{S: &topology, Among: cluster.Topologies}, "topology",
		"the server behind the program: "+cluster.ClientTestTopologies())
	ccfg := cluster.Defaults()
	deploymentFlags(fs, &ccfg)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ccfg.Topology = topology
	if err := foreignFlags(fs, &ccfg); err != nil {
		return fail("client-test: %v", err)
	}
	if fs.NArg() != 1 {
		return fail("client-test: want one program, e.g. lockjepsen client-test examples/redis-py/adapter.py")
	}
	prog := strings.TrimPrefix(fs.Arg(0), lock.Exec+":")
	recipe := lock.Exec + ":" + prog
	if _, err := lock.Lookup(recipe); err != nil {
		return fail("client-test: %v", err)
	}
	// Valkey's build, as a run asks for it: the deployments that start no
	// Valkey are given it and ignore it.
	bins, err := cluster.FindBinaries()
	if err != nil {
		return fail("%v", err)
	}
	dir, err := os.MkdirTemp("", "lockjepsen-client-test-")
	if err != nil {
		return fail("client-test: %v", err)
	}
	defer os.RemoveAll(dir)
	ccfg.Dir, ccfg.Topology = dir, topology
	d := ccfg.Deployment()
	tester, own := d.(cluster.ClientTester)
	if own {
		// The deployment's smallest layout for its cases, but a size the
		// user gave (--nodes, --shards, --members) stands.
		owners := cluster.FlagOwners()
		given := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if _, owned := owners[f.Name]; owned {
				given[f.Name] = givenValue(f, &ccfg)
			}
		})
		tester.ClientTestLayout(&ccfg)
		for name, v := range given {
			if err := fs.Set(name, v); err != nil {
				return fail("client-test: --%s %s: %v", name, v, err)
			}
		}
	}
	if err := ccfg.Validate(); err != nil {
		return fail("client-test: %v", err)
	}
	cl, err := cluster.New(ccfg, bins)
	if err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	uctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	err = cl.Up(uctx)
	cancel()
	defer cl.Down()
	if err != nil {
		return fail("client-test: %s up: %v", topology, err)
	}
	ep := d.Endpoints(cl)
	// A deployment with no case of its own here names itself.
	hooks := cluster.ClientTestHooks{Against: strings.TrimPrefix(d.Banner(ccfg, cl.Version()), "cluster: ")}
	if own {
		hooks = tester.ClientTestHooks(ctx, cl, ep)
	}
	lc := lock.Config{Recipe: recipe, Service: ep}
	lc.ExecArgs, lc.TTL, lc.OpTimeout = execArgs, 5*time.Second, opTimeout
	if hooks.TTL > 0 {
		lc.TTL = hooks.TTL
	}
	opt := lock.ClientTestOptions{PauseNode: hooks.PauseNode, MoveSlot: hooks.MoveSlot, ChangeLeader: hooks.ChangeLeader}
	fmt.Printf("lockjepsen client-test: %s against %s, protocol %d\n", prog, hooks.Against, lock.ProtocolVersion)
	rep, err := lock.ClientTest(ctx, lc, os.Stdout, opt)
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
