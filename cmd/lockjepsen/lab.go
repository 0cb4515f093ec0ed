package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/internal/tty"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/workshop"
)

func init() {
	register(command{name: "lab", summary: "the fencing workshop: 'lab' lists the labs, 'lab N' runs one (docs/workshop/)", run: runLab})
}

func runLab(args []string) int {
	fs := newFlagSet("lab", "lab [flags] [N | all]\n\nwithout N: list the labs. N: print lab N's prediction question, wait for Enter\n(on a terminal, outside CI), run its command, check the page's claims, name what to open.")
	dir := fs.String("dir", workshop.DefaultDir, "folder for the labs' runs (one subfolder per step, replaced on every run)")
	clusterDir := fs.String("cluster-dir", workshop.DefaultClusterDir, "the 'lockjepsen cluster up' topology lab 1 uses (a private one if none answers)")
	noWait := fs.Bool("no-wait", false, "do not wait for Enter after the question")
	capture := fs.String("capture", "", "rewrite the captured outputs of the pages in this folder (docs/workshop) from this session (the timings table only with 'all')")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		listLabs()
		return exitValid
	}
	if fs.NArg() > 1 {
		return fail("lab: one lab at a time (N or all), got %q", fs.Args())
	}
	var labs []workshop.Lab
	if fs.Arg(0) == "all" {
		labs = workshop.Labs()
	} else {
		n, err := strconv.Atoi(fs.Arg(0))
		if err != nil {
			return fail("lab: %q is not a lab number ('lockjepsen lab' lists them)", fs.Arg(0))
		}
		l, err := workshop.Get(n)
		if err != nil {
			return fail("lab: %v", err)
		}
		labs = []workshop.Lab{l}
	}
	// The folders are checked before the first lab starts anything: a
	// --dir no one can create failed each step once its run began, and a
	// --capture folder that is not there only after every lab had run.
	if err := runfolder.CanCreate(*dir); err != nil {
		return fail("lab: --dir %q cannot be created: %v", *dir, err)
	}
	if *clusterDir == "" {
		return fail("lab: --cluster-dir is empty: name the 'lockjepsen cluster up --dir' folder (default %s)", workshop.DefaultClusterDir)
	}
	if *capture != "" {
		if st, err := os.Stat(*capture); err != nil || !st.IsDir() {
			return fail("lab: --capture %s is not a folder of lab pages (docs/workshop)", *capture)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt := workshop.Options{
		Dir: *dir, ClusterDir: *clusterDir, Run: labRun, Out: os.Stdout, In: os.Stdin,
		// A room of laptops waits for Enter; CI and pipes do not.
		Interactive: !*noWait && os.Getenv("CI") == "" && tty.IsTerminal(os.Stdin),
	}
	start := time.Now()
	var reports []workshop.StepReport
	code := exitValid
	for i, l := range labs {
		if i > 0 {
			fmt.Println("\n" + "--------------------------------------------------------------------------------")
		}
		for _, r := range workshop.Play(ctx, l, opt) {
			reports = append(reports, r)
			switch {
			case r.Err != nil:
				code = exitUsage
			case !r.Held() && code == exitValid:
				code = exitInvalid
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	total := time.Since(start)
	if len(labs) > 1 {
		fmt.Printf("\nall labs back to back: %v\n", total.Round(time.Second))
	}
	if code == exitInvalid {
		fmt.Println("\nsome claims did not hold this time: the pages explain why a run can miss; rerun the lab, or try another --seed in its command")
	}
	if *capture != "" {
		// The wall-time table is only rewritten from a session of all labs.
		if err := workshop.Capture(*capture, reports, total, len(labs) == len(workshop.Labs())); err != nil {
			return fail("capture: %v", err)
		}
		fmt.Printf("captured outputs written to %s\n", *capture)
	}
	return code
}

func listLabs() {
	fmt.Println("the fencing workshop (docs/workshop/README.md): run 'lockjepsen lab N'")
	fmt.Println()
	for _, l := range workshop.Labs() {
		fmt.Printf("  %d  %-40s %2d min  docs/workshop/%s\n", l.N, l.Title, l.Minutes, workshop.PageFile(l.N))
	}
	fmt.Printf("\n  labs: %d min of the 90; 'lockjepsen lab all' runs them back to back\n", workshop.TotalMinutes())
}

// labRun is `lockjepsen run ARGS --out DIR` in-process: the same flags, the
// same runner, so a lab runs exactly the command its page prints.
func labRun(ctx context.Context, args []string, out string, progress io.Writer) (string, int, error) {
	cfg, code, ok := runFlags("run", append(append([]string{}, args...), "--out", out), nil)
	if !ok {
		return "", code, fmt.Errorf("lockjepsen run %v: bad flags (exit %d)", args, code)
	}
	o := runner.Run(ctx, cfg, progress)
	_ = runfolder.UpdateLatest(runfolder.Root, out) // a no-op below results/workshop
	if o.Err != nil {
		return o.Summary, o.ExitCode, fmt.Errorf("run: %w", o.Err)
	}
	return o.Summary, o.ExitCode, nil
}
