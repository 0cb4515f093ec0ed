package main

import (
	"context"
	"os"
	"os/signal"
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
	// SIGTERM/SIGINT: abandon the current operation. A graceful stop is the
	// {"stop":true} control line or EOF on stdin, which releases first.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if err := workload.Serve(ctx, os.Stdin, os.Stdout, os.Stderr); err != nil {
		return fail("client: %v", err)
	}
	return exitValid
}
