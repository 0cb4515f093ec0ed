package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/runner"
)

func init() {
	register(command{name: "version", summary: "print lockjepsen's version and the Valkey build it runs", run: runVersion})
}

// runVersion prints what a bug report needs: lockjepsen's version and
// commit, Go's, and the Valkey build `make setup` found (or why none).
func runVersion(args []string) int {
	fs := newFlagSet("version", "version")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	commit := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = " (" + s.Value[:12] + ")"
			}
		}
	}
	fmt.Printf("lockjepsen %s%s, %s\n", runner.Version, commit, runtime.Version())
	// The libraries the recipes drive unchanged, as built in: a finding's
	// pinned build (scripts/pinned-build.sh) says here which version it runs.
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			for _, l := range lock.Libraries() {
				if l.Module != d.Path {
					continue
				}
				extra := ""
				if l.Note != "" {
					extra = " (" + l.Note + ")"
				}
				fmt.Printf("%s %s%s\n", l.Name, d.Version, extra)
			}
		}
	}
	if bins, err := cluster.FindBinaries(); err == nil {
		fmt.Printf("valkey %s (%s)\n", bins.Version, bins.Server)
	} else {
		fmt.Printf("valkey: none found (%v)\n", err)
	}
	return exitValid
}
