package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/lockjepsen/lockjepsen/workload"
)

func init() {
	register(command{name: "client", hidden: true, run: runClient,
		summary: "(internal) one lock client process, started by the runner"})
}

// runClient is the process the runner starts per client slot. Its config is
// the first line of stdin (workload.ClientConfig as JSON), further lines are
// controls; events go to stdout. See docs/history.md.
func runClient(args []string) int {
	fs := newFlagSet("client", "client < config-and-controls")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// One P: a client is one loop and its renewer, waiting on the network
	// nearly all the time, and a run starts one such process per client on a
	// machine of few cores. With a P per core each process wakes a second
	// thread for every goroutine that becomes ready (futex wakes were 18% of
	// the clients' CPU in bench locks); with one, bench locks' ratio to
	// valkey-benchmark went from 0.28 to 0.42 (16 clients, medians of 3
	// interleaved runs on the shared 2-core machine). GOMAXPROCS in the
	// environment still decides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// SIGTERM/SIGINT: abandon the current operation. A graceful stop is the
	// {"stop":true} control line or EOF on stdin, which releases first.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if path := os.Getenv(cpuProfileEnv); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return fail("client: %v", err)
		}
		defer stop()
	}
	if err := workload.Serve(ctx, os.Stdin, os.Stdout, os.Stderr); err != nil {
		return fail("client: %v", err)
	}
	return exitValid
}

// cpuProfileEnv names the file a client process writes its CPU profile to
// (bench locks --cpuprofile sets it for each client).
const cpuProfileEnv = "LOCKJEPSEN_CPUPROFILE"

// startCPUProfile profiles this process into path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
