package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/resource"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// clientHandle is one lock client process.
type clientHandle interface {
	PID() int
	Events() <-chan history.Event
	SetClock(offset time.Duration, rate float64) error
	Stop()
	Wait() error
	Done() <-chan struct{}
}

func signalClient(c clientHandle, sig string) error {
	s := syscall.SIGSTOP
	if sig == "CONT" {
		s = syscall.SIGCONT
	}
	// A client that has exited and been reaped no longer owns its pid: with
	// pid_max at 32768 a CI run recycles pids within minutes, and the group
	// may now be another test's Valkey node (spawned as a group leader).
	if exited(c) {
		return fmt.Errorf("SIG%s client pid %d: it has exited", sig, c.PID())
	}
	// The client's process group (it is its leader): an exec:PATH program,
	// the client's child, stops and continues with it.
	if err := syscall.Kill(-c.PID(), s); err != nil {
		return fmt.Errorf("SIG%s client pid %d: %w", sig, c.PID(), err)
	}
	return nil
}

// exited reports whether the client has exited and been reaped: its pid,
// and the process group it led, may belong to another process by now.
func exited(c clientHandle) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// Outcome is what a run produced.
type Outcome struct {
	Dir      string
	Checked  bool   // the checker ran
	ExitCode int    // package exitcode: 0 valid, 1 invalid, 2 unknown, 254 bad input, 255 not carried out
	Err      error  // why the run could not be carried out
	Summary  string // the checker's human summary
}

type run struct {
	cfg  Config
	exe  string
	dir  string
	out  io.Writer // the caller's progress writer and run.log
	log  io.Writer // run.log alone
	term bool      // the caller's writer is a terminal: redraw the progress line
	// killed holds the client slots the nemesis crashed or killed on
	// purpose: their exit is the fault, not a broken client.
	killedMu sync.Mutex
	killed   map[int]bool
	// stepping is set while a step of a failover fault runs (its
	// nemesis.Fault says Failover, or MovesPrimary: a slot moved to another
	// shard): the failovers and moves it causes are its to log;
	// watchPrimary logs the others, those during any other step included.
	stepping atomic.Bool
	steps    atomic.Int64 // steps of failover faults finished
	cluster  cluster.Runtime
	res      *resourceProc
	resMu    sync.Mutex // res is replaced by a restart-db fault
	hist     *history.Writer
	nem      *history.Writer
	track    *tracker
	clients  []clientHandle
	histMu   sync.Mutex
	writeErr error // the first event the history could not take (histMu)
	// endWorkload stops the clients and the nemesis early (set once they start).
	endWorkload context.CancelFunc
	start       time.Time
	lastLine    time.Duration
}

// record writes one event to history.jsonl (and, for the nemesis, nemesis.jsonl).
func (r *run) record(e history.Event) {
	r.histMu.Lock()
	defer r.histMu.Unlock()
	written, err := r.hist.Write(e)
	if err != nil {
		// A full disk, most likely: one message, and the workload stops, so
		// that what was written is a readable prefix (the reader drops a torn
		// last line) and the run says why it ended.
		if r.writeErr == nil {
			r.writeErr = err
			fmt.Fprintf(r.out, "\nlockjepsen: %v: the run stops here\n", err)
			if r.endWorkload != nil {
				r.endWorkload()
			}
		}
		return
	}
	if !e.IsClient() {
		_, _ = r.nem.Write(written)
	}
	r.track.observe(written)
	r.cfg.Metrics.Observe(written)
}

// Keys returns the lock keys and the resource rows they protect.
func Keys(n int) (keys, runs []string) {
	for i := 1; i <= n; i++ {
		keys = append(keys, fmt.Sprintf("lock:{job-%d}", i))
		runs = append(runs, fmt.Sprintf("job-%d", i))
	}
	return keys, runs
}

// Preflight checks what a run needs from the machine (Valkey binaries,
// libfaketime for clock faults, Docker and its image) before anything is
// printed, and makes the run folder last, once all else is there: a run that
// cannot start leaves no folder, and a folder that cannot be made is bad
// input said before the run's banner (it once printed the banner, then
// exited 255, "not carried out").
func Preflight(ctx context.Context, cfg Config) error {
	// The database first: asking it starts nothing, and a DSN nothing
	// answers is bad input, not a run that fails once the topology is up.
	if cfg.ResourceDSN != "" {
		if err := resource.ReachDSN(ctx, cfg.ResourceDSN); err != nil {
			return fmt.Errorf("--resource-dsn: %w", err)
		}
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return err
	}
	if err := bins.Check(cfg.Cluster); err != nil {
		return err
	}
	c := cfg.Cluster
	c.Dir = filepath.Join(cfg.Out, runfolder.Cluster)
	rt, err := cluster.New(c, bins)
	if err != nil {
		return err
	}
	if p, ok := rt.(cluster.Preflighter); ok {
		if err := p.Preflight(ctx); err != nil {
			return err
		}
	}
	if cfg.Out != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return fmt.Errorf("--out %s cannot be created: %w (choose a folder you can write)", cfg.Out, err)
		}
	}
	return nil
}

// killedBy reads the signal that ended a client process from its Wait error.
func killedBy(err error) (syscall.Signal, bool) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}

func backendName(dsn string) string {
	if dsn != "" {
		return "PostgreSQL"
	}
	return "SQLite"
}

// StepTick is how often playSchedule looks for a step that is due: a step
// fires on the first tick at or after its offset, so a fault's first event
// lies one tick or less after the tick it fired on (shrink --rerun rounds
// an offset read from nemesis.jsonl down to it to fire on the same tick).
const StepTick = 500 * time.Millisecond

// playSchedule runs the nemesis steps at their times, printing progress, until
// the time limit.
func (r *run) playSchedule(ctx context.Context) error {
	if r.cfg.BackToBack {
		return r.playBackToBack(ctx)
	}
	deadline := r.start.Add(r.cfg.TimeLimit)
	tick := time.NewTicker(StepTick)
	defer tick.Stop()
	stepErr := make(chan error, 1)
	next := 0
	running := false
	var firstErr error
	for {
		now := time.Now()
		if !running && next < len(r.cfg.Schedule) && now.Sub(r.start) >= r.cfg.Schedule[next].At {
			s := r.cfg.Schedule[next]
			next++
			running = true
			go func() { stepErr <- r.runStep(ctx, s) }()
		}
		if now.After(deadline) && !running {
			return firstErr
		}
		select {
		case <-ctx.Done():
			if running {
				<-stepErr
			}
			return ctx.Err()
		case err := <-stepErr:
			running = false
			if err != nil && firstErr == nil && ctx.Err() == nil {
				firstErr = err
				fmt.Fprintf(r.out, "\nnemesis: %v\n", err)
			}
		case <-tick.C:
			r.printProgress()
		}
	}
}

// playBackToBack runs the steps one after the other: each fires once the
// previous one returned (healed), the cluster is ready again (polled, not
// slept), its Gap has passed and its planned span still ends before the
// settle tail; then it waits out the time limit.
func (r *run) playBackToBack(ctx context.Context) error {
	deadline := r.start.Add(r.cfg.TimeLimit)
	last := r.start.Add(Warmup)
	params := r.cfg.planParams()
	stepErr := make(chan error, 1)
	var firstErr error
	progress := func(until time.Time) error {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for time.Now().Before(until) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Until(until)):
			case <-tick.C:
				r.printProgress()
			}
		}
		return nil
	}
	for _, s := range r.cfg.Schedule {
		at := last.Add(s.Gap)
		if at.Add(nemesis.Span(s, params)).After(deadline.Add(-Settle)) {
			break
		}
		if err := progress(at); err != nil {
			return err
		}
		go func() { stepErr <- r.runStep(ctx, s) }()
		var err error
		for done := false; !done; {
			select {
			case err = <-stepErr:
				done = true
			case <-time.After(500 * time.Millisecond):
				r.printProgress()
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && firstErr == nil {
			firstErr = err
			fmt.Fprintf(r.out, "\nnemesis: %v\n", err)
		}
		// Ready again: a primary a majority of Sentinels names, answering as
		// one, and every live replica linked to it. A cluster that does not
		// settle ends the fault schedule.
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = r.awaitFaultReady(rctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("cluster not ready after %s: %w", s.Fault, err)
			}
			break
		}
		last = time.Now()
	}
	if err := progress(deadline); err != nil {
		return err
	}
	return firstErr
}

// awaitFaultReady polls until the next fault can act on a settled
// replication topology: a majority of Sentinels name a primary, it answers as
// one, and every live Valkey node replicates it with its link up. It does not
// wait, as WaitReady does, for every Sentinel to have re-pinged a rejoined
// replica (up to Sentinel's 1 s ping period): no fault depends on it, and
// Sentinel promotes among the replicas it sees healthy, of which the one not
// restarted is always one. The end of a run still waits for WaitReady.
func (r *run) awaitFaultReady(ctx context.Context) error {
	if !r.cfg.Cluster.Deployment().Replicated() {
		// No primary and replicas to settle (redlock: every live node
		// answers PING; a consensus service: every live member answers and
		// all name one leader). WaitReady polls that every 50 ms.
		return r.cluster.WaitReady(ctx)
	}
	var last error
	for {
		if last = r.faultReadyOnce(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *run) faultReadyOnce(ctx context.Context) error {
	c := r.cluster
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	if p.PID == 0 || p.Paused {
		return fmt.Errorf("Sentinels name %s, which is down or paused", p.Name)
	}
	inf, err := c.Command(ctx, p.Name, "INFO", "replication")
	if err != nil {
		return err
	}
	if !strings.Contains(inf, "role:master") {
		return fmt.Errorf("%s is named primary but does not answer as one", p.Name)
	}
	for _, n := range c.Nodes() {
		if n.Watches() || n.Name == p.Name || n.PID == 0 || n.Paused {
			continue
		}
		ri, err := c.Command(ctx, n.Name, "INFO", "replication")
		if err != nil {
			return err
		}
		// Under --net-proxy a replica follows the primary's proxy.
		inf := cluster.ParseInfo(ri)
		if !strings.Contains(ri, "master_link_status:up") || !p.Answers(inf["master_host"]+":"+inf["master_port"]) {
			return fmt.Errorf("%s does not replicate %s with its link up yet", n.Name, p.Name)
		}
	}
	return nil
}

func (r *run) printProgress() {
	r.track.drain(truetime.Now() - int64(time.Second))
	ops, faults, suspects := r.track.counts()
	r.cfg.Metrics.DoubleGrantsSeen(suspects)
	el := time.Since(r.start)
	line := fmt.Sprintf("  %5.1fs / %v   %6.0f ops/s   faults %d   double grants seen so far %d",
		el.Seconds(), r.cfg.TimeLimit, float64(ops)/el.Seconds(), faults, suspects)
	// A terminal gets one line redrawn in place; a log or a pipe gets a line
	// every five seconds (run.log too, when the terminal redraws).
	every5 := el-r.lastLine >= 5*time.Second
	if every5 {
		r.lastLine = el
	}
	switch {
	case r.term:
		fmt.Fprint(r.out, "\r"+line+"   ")
		if every5 {
			fmt.Fprintln(r.log, line)
		}
	case every5:
		fmt.Fprintln(r.out, line)
	}
}

// healAll resumes, restarts and resets whatever a fault may have left broken,
// so the checker sees a settled system.
func (r *run) healAll() {
	for _, c := range r.clients {
		_ = signalClient(c, "CONT")
		if u, ok := c.(unreachabler); ok {
			_ = u.SetUnreachable(nil)
		}
	}
	if p, ok := r.cluster.(cluster.Partitioner); ok {
		for _, n := range p.Partitioned() {
			_ = p.Heal(n)
		}
	}
	for _, n := range r.cluster.Nodes() {
		if n.Paused {
			_ = r.cluster.Resume(n.Name)
		}
		if n.ClockOff != "" && n.ClockOff != "+0" {
			_ = r.cluster.SetClockOffset(n.Name, "")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range r.cluster.Nodes() {
		if n.Killed {
			_ = r.cluster.Restart(ctx, n.Name, cluster.AsReplica)
		}
	}
	// What only a fault knows it may leave behind (its catalog entry's heal).
	for _, name := range r.cfg.Faults {
		if f, err := nemesis.Lookup(name); err == nil {
			if err := f.Heal(ctx, env{r}); err != nil {
				fmt.Fprintf(r.out, "warning: heal %s: %v\n", name, err)
			}
		}
	}
}

// finishLogs closes the history, exports the resource's attempts and copies
// node logs; it runs on every path out of a run that got that far.
func (r *run) finishLogs() {
	r.histMu.Lock()
	if r.hist != nil {
		_ = r.hist.Close()
		_ = r.nem.Close()
	}
	r.histMu.Unlock()
	if r.res != nil {
		if err := r.res.export(r.exe, filepath.Join(r.dir, runfolder.Resource)); err != nil {
			fmt.Fprintf(r.out, "warning: %v\n", err)
		}
	}
	if r.cluster != nil {
		_ = r.cluster.CollectLogs(filepath.Join(r.dir, runfolder.Logs))
	}
	// Sort the arrival-ordered history by true time, atomically, so the file
	// on disk is in the documented order. SortFile holds 32 bytes an event,
	// not the events: reading them all here made the run's process peak at
	// 5.3 GiB on 9M events, where checking the folder takes 1.38 GiB. A
	// history the reader refuses stays as it is, for the check to name.
	_ = history.SortFile(filepath.Join(r.dir, runfolder.History))
}

// teardown ends every process this run started, whatever happened.
func (r *run) teardown() {
	for _, c := range r.clients {
		_ = syscall.Kill(-c.PID(), syscall.SIGKILL) // its group: an exec program too
	}
	r.resMu.Lock()
	if r.res != nil {
		r.res.stop()
	}
	r.resMu.Unlock()
	if r.cluster != nil {
		_ = r.cluster.CollectLogs(filepath.Join(r.dir, runfolder.Logs))
		_ = r.cluster.Down()
	}
	fmt.Fprintf(r.out, "%-14s %s\n", "["+time.Now().Format("15:04:05.000")+"]", "down: every process stopped")
}

// ShellJoin quotes a command line so that it can be pasted into a shell.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=:/.,+@%") == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// nodeCapabilityWarnings asks every Valkey node, not only the primary,
// whether it can run the recipe, and says which cannot. It asks what the
// server has (lock.CheckServer), never through a write: an exec recipe's
// probe acquire on a replica answered READONLY and warned, on every exec run
// and for every replica, of a failure the node would not have once promoted.
func (r *run) nodeCapabilityWarnings(ctx context.Context, lcfg lock.Config) []string {
	if !lcfg.Service.Protocol.Valkey() {
		return nil // a consensus member or a database: the recipe's own check asked them all
	}
	var out []string
	for _, n := range r.cluster.Nodes() {
		if n.Watches() || n.PID == 0 {
			continue
		}
		c := lcfg
		c.Service = lcfg.Service.Node(n.Addr)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := lock.CheckServer(cctx, c)
		cancel()
		if err != nil {
			out = append(out, fmt.Sprintf("%s can become primary but %v; if a failover promotes it, those commands fail there", n.Name, err))
		}
	}
	return out
}

// meantToDie reports whether the nemesis ended client i on purpose.
func (r *run) meantToDie(i int) bool {
	r.killedMu.Lock()
	defer r.killedMu.Unlock()
	return r.killed[i]
}

// markKilled records that the nemesis is about to end client i.
func (r *run) markKilled(i int) {
	r.killedMu.Lock()
	defer r.killedMu.Unlock()
	if r.killed == nil {
		r.killed = map[int]bool{}
	}
	r.killed[i] = true
}

// runStep runs one nemesis step, marking a failover fault's in progress.
// Only a failover fault logs the failovers it causes: a failover during
// any other step (Sentinel failing over a primary whose links a network
// fault keeps dropping, seen under back-to-back net-timeout, where an
// unlogged one left 28 double grants blamed on no fault) is watchPrimary's
// to log.
func (r *run) runStep(ctx context.Context, s nemesis.Step) error {
	defer r.markStep(s)()
	return nemesis.Run(ctx, env{r}, s)
}

// markStep marks s in progress if its fault is a failover fault, and
// returns what marks it ended.
func (r *run) markStep(s nemesis.Step) (ended func()) {
	if f, err := nemesis.Lookup(s.Fault); err != nil || !(f.Failover || f.MovesPrimary) {
		return func() {}
	}
	r.stepping.Store(true)
	return func() { r.steps.Add(1); r.stepping.Store(false) }
}

// watchPrimary logs a failover no fault step drove: Sentinel re-running a
// failover it lost and promoting another replica seconds later (seen halfway
// through a rolling upgrade), or a leader election nobody asked for. Without
// it the checker blames a double grant there on no fault at all.
func (r *run) watchPrimary(ctx context.Context) {
	primary := func() string {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		p, err := r.cluster.Primary(pctx)
		if err != nil {
			return ""
		}
		return p.Name
	}
	last := primary()
	if last == "" {
		return // no single primary to watch (redlock), or none yet
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	seen := r.steps.Load()
	stale := "" // the old primary of an undriven failover, still serving
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if stale != "" {
			if still, role := r.servesAsPrimary(ctx, stale); !still {
				env{r}.Log(history.Event{F: history.NStalePrimaryDemoted, Node: stale,
					Detail: fmt.Sprintf("%s no longer serves as a primary (%s)", stale, role)})
				stale = ""
			}
		}
		p := primary()
		if p == "" {
			// No primary known (no majority of Sentinels agrees yet): a
			// step that ended meanwhile still owns the failover found at
			// the next look, so its end is not consumed here. Consumed,
			// a failover a kill drove was logged once more as undriven,
			// naming a primary long gone as the one before.
			continue
		}
		// A failover fault's step running now, or one that ended since the
		// last look, logs its own failovers.
		stepped := r.stepping.Load() || r.steps.Load() != seen
		seen = r.steps.Load()
		switch {
		case stepped:
			last = p
		case p != last:
			env{r}.Log(history.Event{F: history.NFailover, Node: p, Role: string(cluster.RolePrimary),
				Detail: fmt.Sprintf("%s became primary with no failover fault running (%s was): a failover the nemesis did not drive", p, last)})
			// No fault killed or paused the old primary: until Sentinel
			// demotes it, clients still on it are granted locks the new
			// primary knows nothing of (the checker blames that window's
			// double grants on split brain, not on no fault at all).
			if still, _ := r.servesAsPrimary(ctx, last); still && stale == "" {
				env{r}.Log(history.Event{F: history.NStalePrimary, Node: last, Role: string(cluster.RolePrimary),
					Detail: fmt.Sprintf("%s still serves as a primary after %s's promotion", last, p)})
				stale = last
			}
			last = p
		}
	}
}

// servesAsPrimary asks node for its ROLE: true while it answers master; the
// role it answered (or why it did not) otherwise.
func (r *run) servesAsPrimary(ctx context.Context, node string) (bool, string) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out, err := r.cluster.Command(cctx, node, "ROLE")
	if err != nil {
		return false, "no answer: " + err.Error()
	}
	role, _, _ := strings.Cut(out, "\n")
	return role == "master", "role " + role
}

// wallOffset is the host's wall clock less the monotonic clock every event is
// stamped with (truetime): constant unless the wall clock is stepped or slewed.
// Valkey sets and expires a key's TTL by the wall clock, so a step forward
// during a run ends leases early with no fault injected. Seen once in three CI
// runs: a double grant with no fault in force, 330 ms inside the first
// holder's lease; this is one of the causes a run can rule out for itself.
// Of five readings it keeps the one taken in the shortest span, so that a
// thread descheduled between its two clock reads under load (ms on a busy
// 2-core machine) does not pass for a step.
func wallOffset() int64 {
	span, off := int64(1<<62), int64(0)
	for range 5 {
		m1 := truetime.Now()
		w := time.Now().UnixNano()
		m2 := truetime.Now()
		if m2-m1 < span {
			span, off = m2-m1, w-(m1+m2)/2
		}
	}
	return off
}

// wallStepNoted is the change of wallOffset over elapsed worth a warning: more
// than NTP's largest slew (500 ppm) accounts for, plus 20 ms of reading noise.
func wallStepNoted(elapsed time.Duration) int64 {
	return int64(20*time.Millisecond) + int64(elapsed)/2000
}
