package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/tty"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// Run carries out one run in cfg.Out. Every phase leaves what it produced on
// disk, so a run that fails or is interrupted halfway is still checkable with
// `lockjepsen check DIR`. The phases, in order: prepare (the folder, its
// config and logs), start (the deployment, the recipe's check, the resource
// and the clients), workload (the schedule played), heal, stop (the clients
// finish and release) and check.
func Run(ctx context.Context, cfg Config, progress io.Writer) Outcome {
	o := Outcome{Dir: cfg.Out, ExitCode: exitcode.Crashed}
	p, err := prepare(ctx, cfg, progress)
	if err != nil {
		o.Err = err
		return o
	}
	defer p.closeLog()
	defer p.teardown()
	defer p.endWorkload()
	if code, err := p.startAll(); err != nil {
		o.Err = err
		if code != exitcode.Crashed {
			o.ExitCode = code
		}
		return o
	}
	p.playWorkload()
	p.heal()
	p.stopClients()
	return p.check(o)
}

// phases is what one run's phases hand on to each other.
type phases struct {
	*run
	ctx      context.Context // the caller's: its end interrupts the run
	bins     cluster.Binaries
	closeLog func()
	phaseOut io.Writer
	keys     []string
	lcfg     lock.Config
	// wctx is the workload's: a client that breaks or a resource that
	// dies ends it early, with the history kept.
	wctx        context.Context
	pumps       sync.WaitGroup // each client's events read to their end
	watchers    sync.WaitGroup // each client's exit seen
	clientErrMu sync.Mutex
	clientErr   error // the first client to exit with an error
	resDied     chan error
	wallAtStart int64
	nemErr      error
	healErr     error
	interrupted bool
}

// phase prints a phase line. Phase lines carry milliseconds: a sweep reads
// where a trial's wall time went from its run.log.
func (p *phases) phase(s string) {
	fmt.Fprintf(p.phaseOut, "%-14s %s\n", "["+time.Now().Format("15:04:05.000")+"]", s)
}

// prepare makes the run folder, writes config.json and opens run.log and
// the histories. Nothing runs yet.
func prepare(ctx context.Context, cfg Config, progress io.Writer) (*phases, error) {
	exe := cfg.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find own executable: %w", err)
		}
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return nil, err
	}
	if runfolder.HoldsRun(cfg.Out) {
		return nil, fmt.Errorf("%s already holds a run: choose another folder (runs are never overwritten; 'lockjepsen check %s' re-checks it)", cfg.Out, cfg.Out)
	}
	if err := bins.Check(cfg.Cluster); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", cfg.Out, err)
	}
	cfg.Versions = Versions{Valkey: bins.Version, Lockjepsen: Version, Go: runtime.Version()}
	cfg.Cluster.Dir = filepath.Join(cfg.Out, runfolder.Cluster)
	if err := runfolder.WriteJSON(filepath.Join(cfg.Out, runfolder.Config), cfg); err != nil {
		return nil, err
	}
	// run.log keeps what the terminal shows (phases, fault steps, progress
	// every five seconds, the summary), as Jepsen keeps jepsen.log.
	logf, err := os.Create(filepath.Join(cfg.Out, runfolder.RunLog))
	if err != nil {
		return nil, fmt.Errorf("create run log: %w", err)
	}
	if len(cfg.Command) > 0 {
		fmt.Fprintf(logf, "$ %s\n", ShellJoin(cfg.Command))
	}
	term := tty.IsTerminal(progress)
	progress = io.MultiWriter(progress, logf)
	r := &run{cfg: cfg, exe: exe, dir: cfg.Out, out: progress, log: logf, term: term, track: newTracker(cfg.TTL)}
	p := &phases{run: r, ctx: ctx, bins: bins, closeLog: func() { logf.Close() }, phaseOut: progress}
	if r.hist, err = history.Create(filepath.Join(cfg.Out, runfolder.History)); err != nil {
		p.teardown()
		p.closeLog()
		return nil, err
	}
	if r.nem, err = history.Create(filepath.Join(cfg.Out, runfolder.Nemesis)); err != nil {
		p.teardown()
		p.closeLog()
		return nil, err
	}
	return p, nil
}

// startAll brings up the deployment, checks the recipe on its server,
// starts the resource and the clients. A server that cannot run the recipe
// returns exitcode.BadInput with its error.
func (p *phases) startAll() (int, error) {
	ctx, cfg := p.ctx, p.cfg
	var err error
	if p.cluster, err = cluster.New(cfg.Cluster, p.bins); err != nil {
		return exitcode.Crashed, err
	}
	p.phase(cfg.Cluster.Deployment().Banner(cfg.Cluster, p.cluster.Version()))
	if err := p.cluster.Up(ctx); err != nil {
		return exitcode.Crashed, fmt.Errorf("cluster up: %w", err)
	}
	keys, runs := Keys(cfg.Keys)
	p.keys = keys
	p.lcfg = p.lockConfig()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	caps, err := lock.Check(cctx, p.lcfg)
	cancel()
	if err != nil {
		// The server cannot run this recipe: bad input, the one code of
		// that class, whether it is known before the start (an old
		// server, a Lua-less build) or only from the running server.
		var refusal *lock.Refusal
		if errors.As(err, &refusal) {
			return exitcode.BadInput, fmt.Errorf("recipe %s on this server: %w", cfg.Recipe, err)
		}
		return exitcode.Crashed, fmt.Errorf("recipe %s on this server: %w", cfg.Recipe, err)
	}
	p.phase(fmt.Sprintf("server: %s", caps))
	// A failover can promote any replica: a node that cannot run the recipe
	// (an 8.1 node without DELIFEQ halfway through a rolling upgrade) is
	// warned about before the run, not discovered in its releases.
	for _, w := range p.nodeCapabilityWarnings(ctx, p.lcfg) {
		fmt.Fprintf(p.out, "warning: %s\n", w)
	}

	fenceFrom := ""
	if cfg.FenceSource == knob.FenceSourceResource {
		fenceFrom = ", fence numbers from the database's own sequence"
	}
	p.phase(fmt.Sprintf("resource: fence mode %s, %s%s", cfg.Fence, backendName(cfg.ResourceDSN), fenceFrom))
	if p.res, err = startResource(ctx, p.exe, cfg.Out, cfg.Fence, cfg.ResourceDSN, runs); err != nil {
		return exitcode.Crashed, err
	}

	p.phase(fmt.Sprintf("clients: %d processes, recipe %s, %d key(s), TTL %v", cfg.Clients, cfg.Recipe, cfg.Keys, cfg.TTL))
	// A client that exits with an error during the run (an exec:PATH program
	// that broke the protocol, a lost connection at start) ends the workload:
	// the run stops with exit 254 naming it, and the history so far is checked.
	wctx, endWorkload := context.WithCancel(ctx)
	p.wctx = wctx
	p.histMu.Lock()
	p.run.endWorkload = endWorkload
	p.histMu.Unlock()
	// The resource service dying by another hand than the nemesis's (the
	// OOM killer, an operator) ends the workload too: every read and write
	// after it would end unknown, and a verdict over them says less than it
	// seems to. The run stops, what was recorded is checked, and it exits 255.
	p.resDied = make(chan error, 1)
	go func() { p.resDied <- p.watchResource(wctx); endWorkload() }()
	for i := 0; i < cfg.Clients; i++ {
		if err := p.startClient(i); err != nil {
			return exitcode.Crashed, err
		}
	}
	return exitcode.Valid, nil
}

// endWorkload stops the clients and the nemesis early, once they started.
func (p *phases) endWorkload() {
	p.histMu.Lock()
	end := p.run.endWorkload
	p.histMu.Unlock()
	if end != nil {
		end()
	}
}

// startClient starts client i, a pump that waits for the end of its events
// and a watcher of its exit.
func (p *phases) startClient(i int) error {
	// The client's pipe reader records each event itself (OnEvent);
	// the pump below only waits for the end of its events, which
	// Events' close marks.
	c, err := startClient(context.Background(), p.exe, p.clientConfig(i, p.keys, p.lcfg), p.cfg.Out, p.record)
	if err != nil {
		return fmt.Errorf("start client %d: %w", i, err)
	}
	p.clients = append(p.clients, c)
	p.pumps.Add(1)
	go func() {
		defer p.pumps.Done()
		for range c.Events() {
		}
	}()
	p.watchers.Add(1)
	go func() {
		defer p.watchers.Done()
		if err := c.Wait(); err != nil && !p.meantToDie(i) {
			if sig, ok := killedBy(err); ok {
				// Killed by another hand: the run goes on without it, as
				// after the kill-holder fault, and says so.
				env{p.run}.Log(history.Event{F: history.NClientExited, Node: nemesis.ClientNode(i),
					Detail: fmt.Sprintf("client %d (pid %d) was ended by signal %d (%v), not by a fault of the schedule; the run goes on without it", i, c.PID(), int(sig), sig)})
				fmt.Fprintf(p.out, "\nwarning: client %d (pid %d) was ended by signal %d (%v), not by lockjepsen; the run goes on without it\n", i, c.PID(), int(sig), sig)
				return
			}
			p.clientErrMu.Lock()
			if p.clientErr == nil {
				p.clientErr = err
			}
			p.clientErrMu.Unlock()
			p.endWorkload()
		}
	}()
	return nil
}

// playWorkload plays the fault schedule while the clients work, watching
// the primary, until the time limit or an early end.
func (p *phases) playWorkload() {
	cfg := p.cfg
	p.start = time.Now()
	p.cfg.WorkloadStart = truetime.Now()
	p.wallAtStart = wallOffset()
	if err := runfolder.WriteJSON(filepath.Join(cfg.Out, runfolder.Config), p.cfg); err != nil {
		fmt.Fprintf(p.out, "warning: config.json without the workload's start: %v\n", err)
	}
	planned := fmt.Sprintf("scheduled from seed %d", cfg.Seed)
	if len(cfg.FaultsAt) > 0 {
		planned = "at the --faults-at offsets"
	}
	// The entries' names: a fault given over a target (kill-leader) says
	// here which entry of this deployment it is.
	if len(cfg.Faults) > 0 {
		planned = "of " + strings.Join(cfg.Faults, ", ") + " " + planned
	}
	p.phase(fmt.Sprintf("workload: %v, %d fault(s) %s", cfg.TimeLimit, len(cfg.Schedule), planned))
	watchCtx, stopWatch := context.WithCancel(p.wctx)
	watched := make(chan struct{})
	go func() { defer close(watched); p.watchPrimary(watchCtx) }()
	p.nemErr = p.playSchedule(p.wctx)
	stopWatch()
	<-watched
	p.interrupted = p.ctx.Err() != nil
	if p.term {
		fmt.Fprintln(p.out)
	}
}

// heal heals every fault and waits up to 30 s for the deployment to settle.
func (p *phases) heal() {
	p.phase("heal: every fault healed; " + p.cfg.Cluster.Deployment().Settled())
	p.healAll()
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	p.healErr = p.cluster.WaitReady(hctx)
	hcancel()
}

// stopClients lets every client finish its operation and release, then
// audits what the servers still hold.
func (p *phases) stopClients() {
	p.phase("stop: clients finish their operation and release")
	for _, c := range p.clients {
		c.Stop()
	}
	for _, c := range p.clients {
		_ = c.Wait()
	}
	p.pumps.Wait()
	p.auditPTTL(p.keys)
	p.finalDoubleGrants()
	p.finishLogs()
	p.watchers.Wait()
}

// check checks the run folder and fills o: the verdict's exit code, or why
// the run itself failed.
func (p *phases) check(o Outcome) Outcome {
	cfg, progress := p.cfg, p.out
	failedClient := p.clientErr // every watcher has returned
	nemErr := p.nemErr
	if failedClient != nil {
		nemErr = nil // the nemesis was cut short by the stop, not broken
	}
	if nemErr != nil && !p.interrupted {
		o.Err = fmt.Errorf("nemesis: %w (history kept; check it with 'lockjepsen check %s')", nemErr, cfg.Out)
	}
	if p.healErr != nil && !p.interrupted {
		fmt.Fprintf(progress, "warning: cluster did not settle: %v\n", p.healErr)
	}
	if step := wallOffset() - p.wallAtStart; max(step, -step) > wallStepNoted(time.Since(p.start)) {
		p.cfg.WallStep = step
		if err := runfolder.WriteJSON(filepath.Join(cfg.Out, runfolder.Config), p.cfg); err != nil {
			fmt.Fprintf(progress, "warning: config.json without the wall clock's step: %v\n", err)
		}
		fmt.Fprintf(progress, "warning: the host's wall clock moved %v against the monotonic clock during the run: Valkey expires keys by the wall clock (valkey-io/valkey#2651), so leases may have ended early or late, and a double grant with no fault in force can come from it\n",
			time.Duration(step).Round(time.Millisecond))
	}
	p.phase("check")
	res, code, err := CheckDir(cfg.Out)
	p.histMu.Lock()
	writeErr := p.writeErr
	p.histMu.Unlock()
	if writeErr != nil {
		// The check's own files may not fit either; the history is what counts.
		o.Err = fmt.Errorf("%w: the run stopped at the first event it could not write; the events before it are in %s, readable by 'lockjepsen check %s' once there is room",
			writeErr, cfg.Out, cfg.Out)
		o.ExitCode, o.Checked, o.Summary = exitcode.Crashed, err == nil, res
		return o
	}
	if err != nil {
		o.Err = err
		return o
	}
	o.Checked, o.ExitCode, o.Summary = true, code, res
	fmt.Fprintf(p.log, "\n%s", res)
	if p.interrupted {
		o.Err = fmt.Errorf("interrupted: the history up to the interruption is in %s", cfg.Out)
		o.ExitCode = exitcode.Crashed
	}
	if failedClient != nil {
		o.Err = fmt.Errorf("%w (the run stopped; history kept: 'lockjepsen check %s' re-checks it)", failedClient, cfg.Out)
		o.ExitCode = exitcode.BadInput // the client program broke its protocol
	}
	p.endWorkload() // a watcher still waiting returns
	if err := <-p.resDied; err != nil && failedClient == nil && !p.interrupted {
		o.Err = fmt.Errorf("%w: the run stopped; what was recorded is in %s ('lockjepsen check %s' re-checks it)", err, cfg.Out, cfg.Out)
		o.ExitCode = exitcode.Crashed
	}
	if o.Err != nil && o.ExitCode == exitcode.Valid {
		o.ExitCode = exitcode.Crashed
	}
	return o
}

// HostClockStepped reads the run folder's config.json: how far the host's
// wall clock stepped during the run, if it did (Config.WallStep).
func HostClockStepped(dir string) (time.Duration, bool) {
	var c Config
	if runfolder.ReadJSON(filepath.Join(dir, runfolder.Config), &c) != nil || c.WallStep == 0 {
		return 0, false
	}
	return time.Duration(c.WallStep), true
}
