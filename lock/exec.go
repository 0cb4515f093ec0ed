package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
)

// Exec is the recipe that runs the user's own lock client: exec:PATH.
const Exec = "exec"

// ExecProgram returns the program of an exec:PATH recipe name, or "" when the
// name is not one.
func ExecProgram(recipe string) string {
	p, found := strings.CutPrefix(recipe, Exec+":")
	if !found {
		return ""
	}
	return p
}

// checkProgram refuses an exec recipe whose program cannot be started.
func checkProgram(recipe string) error {
	p := ExecProgram(recipe)
	if p == "" {
		return fmt.Errorf("recipe %q: name the program, exec:PATH (docs/protocol.md)", recipe)
	}
	if !strings.Contains(p, "/") {
		p = "./" + p // a bare name is a file here, as in the run's folder, not a PATH lookup
	}
	if _, err := exec.LookPath(p); err != nil {
		return fmt.Errorf("recipe %s: %v (the program must be an executable file)", recipe, err)
	}
	return nil
}

// KeyPrefix starts every lock key lockjepsen asks for: lock:{name}.
const KeyPrefix = "lock:"

// execLock speaks docs/protocol.md to a program started per client. The
// program is this process's child in its process group, so a SIGSTOP or
// SIGKILL of the client's group reaches it, and it dies with the client
// (parent-death signal).
type execLock struct {
	cfg  Config
	cmd  *exec.Cmd
	conn *execConn
	done chan struct{} // closed when the program has exited

	mu     sync.Mutex
	tokens map[string]string // caller's token → the token the program stored
	// validity: the lease left that the program reported (validity_ms) on
	// the token's last ok acquire or extend; absent when it reports none.
	validity map[string]time.Duration
	// dialMap: the program said at init that it dials through
	// LOCKJEPSEN_DIAL_MAP; partitions: that it takes "unreachable";
	// cancels and drops: that it takes "cancel" and "drop_reply".
	dialMap, partitions, cancels, drops bool
	// usual: the moving average of the program's answer time, which a
	// cancel's moment is drawn within (cancelLag).
	usual time.Duration
}

// ExecEnv is the environment an exec program gets on top of lockjepsen's own:
// the deployment's endpoints (endpoint.Set.Env) and the run's settings.
func ExecEnv(cfg Config) []string {
	rate := cfg.ClockRate
	if rate == 0 {
		rate = 1
	}
	opTimeout := cfg.OpTimeout
	if opTimeout <= 0 {
		opTimeout = time.Second // the client's default (workload.ClientConfig.OpTimeout)
	}
	env := []string{
		"LOCKJEPSEN_PROTOCOL=" + strconv.Itoa(ProtocolVersion),
		"LOCKJEPSEN_KEY_PREFIX=" + KeyPrefix,
		"LOCKJEPSEN_TTL_MS=" + strconv.FormatInt(cfg.TTL.Milliseconds(), 10),
		"LOCKJEPSEN_OP_TIMEOUT_MS=" + strconv.FormatInt(opTimeout.Milliseconds(), 10),
		"LOCKJEPSEN_CLIENT=" + strconv.Itoa(cfg.Client),
		"LOCKJEPSEN_CLOCK_OFFSET_NS=" + strconv.FormatInt(int64(cfg.ClockOffsetMs*float64(time.Millisecond)), 10),
		"LOCKJEPSEN_CLOCK_RATE=" + strconv.FormatFloat(rate, 'g', -1, 64),
	}
	env = append(env, cfg.Service.Env()...)
	if cli := valkeyCLI(); cli != "" {
		env = append(env, "LOCKJEPSEN_VALKEY_CLI="+cli)
	}
	return env
}

// valkeyCLI finds valkey-cli the way the cluster finds its binaries:
// $LOCKJEPSEN_VALKEY_BIN, the directory scripts/setup.sh recorded, PATH.
func valkeyCLI() string {
	if p := os.Getenv("LOCKJEPSEN_VALKEY_CLI"); p != "" {
		return p
	}
	dirs := []string{os.Getenv("LOCKJEPSEN_VALKEY_BIN")}
	cache := os.Getenv("LOCKJEPSEN_CACHE")
	if cache == "" {
		cache = "/var/cache/lockjepsen"
	}
	if b, err := os.ReadFile(filepath.Join(cache, "env")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, found := strings.CutPrefix(line, "LOCKJEPSEN_VALKEY_BIN="); found {
				dirs = append(dirs, strings.TrimSpace(v))
			}
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "valkey-cli"); fileExists(p) {
			return p
		}
	}
	p, _ := exec.LookPath("valkey-cli")
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func openExec(cfg Config) (Lock, error) {
	prog := ExecProgram(cfg.Recipe)
	path := prog
	if !strings.Contains(path, "/") {
		path = "./" + path
	}
	cmd := exec.Command(path, cfg.ExecArgs...)
	// No Setpgid: the program stays in the client's process group, so the
	// nemesis's SIGSTOP of the group stops it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(inheritedEnv(os.Environ()), ExecEnv(cfg)...)
	cmd.Stderr = os.Stderr // the client's diagnostics log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", prog, err)
	}
	l := &execLock{cfg: cfg, cmd: cmd, conn: newExecConn(prog, stdin), done: make(chan struct{}), tokens: map[string]string{}, validity: map[string]time.Duration{}}
	go func() {
		rerr := l.conn.read(stdout)
		// Wait after stdout is drained, as os/exec requires.
		werr := cmd.Wait()
		if errors.Is(rerr, errExited) {
			status := "exit 0"
			if werr != nil {
				status = werr.Error()
			}
			l.conn.fatal(fmt.Errorf("%s closed its stdout while lockjepsen was still using it (%s); its stderr is in the client's log", prog, status))
		}
		close(l.done)
	}()
	// init, as in Maelstrom: the program answers once it is ready (an
	// interpreter may take a while to start on a loaded machine), so that no
	// operation's timeout is spent waiting for it to load.
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	rep, err := l.conn.call(ctx, execRequest{Op: "init", Protocol: ProtocolVersion})
	if err == nil && rep.Type != "ok" {
		err = fmt.Errorf("init answered %s: %s", rep.Type, rep.Error)
	}
	if err != nil {
		l.Close()
		// The user's program would not start here (it may have said why
		// and exited, on a deployment it cannot serve): bad input, exit 254.
		return nil, refuse("%s did not get ready: %v (this deployment hands it %s; docs/protocol.md lists what each sets)",
			prog, err, strings.Join(endpointVars(cfg), ", "))
	}
	l.dialMap, l.partitions, l.cancels, l.drops = rep.DialMap, rep.Unreachable, rep.Cancel, rep.DropReply
	return l, nil
}

// endpointVars names the variables of ExecEnv that locate the deployment
// and are set for cfg, for a program that expected another.
func endpointVars(cfg Config) []string {
	var out []string
	for _, kv := range cfg.Service.Env() {
		name, val, _ := strings.Cut(kv, "=")
		if name != "LOCKJEPSEN_MASTER_SET" && name != "LOCKJEPSEN_SERVICE" && val != "" {
			out = append(out, name)
		}
	}
	return out
}

// inheritedEnv is lockjepsen's own environment without the variables that
// locate a deployment: a program must see only the deployment of this run.
// One inherited from the shell would point it elsewhere; seen in the test
// suite, whose LOCKJEPSEN_PG_DSN (the resource's test database) reached the
// PostgreSQL adapter on a Valkey run, which then answered init ok.
func inheritedEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !endpoint.IsEnvName(name) {
			out = append(out, kv)
		}
	}
	return out
}

// SetUnreachable implements Reachability: the program is told which nodes
// it must send nothing to (nil: every node again), and has up to a second to
// take it; a program that did not say at init that it takes the request is
// not sent it (the probe refused the run if a fault needed it).
func (l *execLock) SetUnreachable(addrs []string) {
	if !l.partitions {
		return
	}
	if addrs == nil {
		addrs = []string{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if rep, err := l.conn.call(ctx, execRequest{Op: "unreachable", Addrs: &addrs}); err != nil || rep.Type != "ok" {
		fmt.Fprintf(os.Stderr, "%s: unreachable %v: %v %s\n", ExecProgram(l.cfg.Recipe), addrs, err, rep.Error)
	}
}

// initTimeout bounds a program's start, up to its answer to init.
const initTimeout = 30 * time.Second

func (l *execLock) Recipe() string                      { return l.cfg.Recipe }
func (l *execLock) SelfRenewing() bool                  { return false }
func (l *execLock) Lost(string, string) <-chan struct{} { return nil }
func (l *execLock) Observe(Observer)                    {}

// SafeRelease: the protocol requires a release that checks the token.
func (l *execLock) SafeRelease() bool { return true }

// Broken is closed when the program broke the protocol or exited; Err says
// how. The client then stops: a run cannot go on with a client it cannot
// trust.
func (l *execLock) Broken() <-chan struct{} { return l.conn.broken }

// Err is the protocol error or exit that broke the program, or nil.
func (l *execLock) Err() error { return l.conn.Err() }

// Close closes the program's stdin (end of requests), waits a second for it
// to exit, then kills it.
func (l *execLock) Close() {
	l.conn.mu.Lock()
	l.conn.closing = true
	l.conn.mu.Unlock()
	if c, ok := l.conn.w.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	select {
	case <-l.done:
		return
	case <-time.After(time.Second):
	}
	_ = l.cmd.Process.Kill()
	<-l.done
}

// takes reports whether the program said at init that it takes the reply
// fault mode.
func (l *execLock) takes(mode string) bool {
	return (mode == ReplyCancel && l.cancels) || (mode == ReplyDrop && l.drops)
}

// cancelLag is when a cancel follows its request: at a moment drawn
// uniformly within the program's usual answer time (a moving average of its
// last answers). The Go recipes' cancel lands with the reply on the wire,
// which lockjepsen cannot see inside a program; drawn so, a cancel lands
// before the command is sent, while it runs or after its reply, as an
// application's deadline does. Measured with examples/redis-py-asyncio:
// with a fixed lag of 0-2 ms both cancels of a 20 s cancelled-calls run came
// after the answer (acquire p50 1.6 ms); drawn so, 6 of 20 landed mid-call
// on 10 seeds (docs/client-faults.md).
func (l *execLock) cancelLag() time.Duration {
	l.mu.Lock()
	usual := l.usual
	l.mu.Unlock()
	if usual <= 0 {
		usual = time.Millisecond
	}
	return rand.N(usual)
}

// noteAnswerTime folds one answered operation's time into usual.
func (l *execLock) noteAnswerTime(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.usual <= 0 {
		l.usual = d
		return
	}
	l.usual += (d - l.usual) / 8
}

// call is an operation's request with the armed reply fault, if the
// program takes it: drop_reply in the request, or a cancel after it.
//
// The fault lands when it reaches the operation in flight: a drop_reply
// the program declared it takes, or a cancel sent before its answer came.
// A cancel whose moment comes after the answer is not sent at all (it
// would cancel nothing).
func (l *execLock) call(ctx context.Context, req execRequest) (execReply, error) {
	var sent func(int64)
	var timer *time.Timer
	var inFlight chan bool
	switch armedReply.takeExec(l.takes) {
	case ReplyDrop:
		req.DropReply = true
		armedReply.land()
	case ReplyCancel:
		lag := l.cancelLag()
		inFlight = make(chan bool, 1)
		sent = func(id int64) { timer = time.AfterFunc(lag, func() { inFlight <- l.conn.cancel(id) }) }
	}
	start := time.Now()
	rep, err := l.conn.callThen(ctx, req, sent)
	if err == nil && sent == nil {
		l.noteAnswerTime(time.Since(start))
	}
	if timer != nil && !timer.Stop() && <-inFlight {
		armedReply.land()
	}
	return rep, err
}

func (l *execLock) progToken(token string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, found := l.tokens[token]; found {
		return t
	}
	return token
}

// outcome turns a reply (or the call's error) into a Result.
func (l *execLock) outcome(op string, rep execReply, err error) Result {
	if err != nil {
		return Result{history.Info, err}
	}
	msg := rep.Error
	if msg == "" {
		msg = op + " " + rep.Type
	}
	switch rep.Type {
	case "ok":
		return ok()
	case "fail":
		if rep.NotHeld {
			return fail(fmt.Errorf("%s (%w)", msg, ErrNotHeld))
		}
		return fail(errors.New(msg))
	}
	return Result{history.Info, errors.New(msg)}
}

func (l *execLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	rep, err := l.call(ctx, execRequest{Op: "acquire", Key: key, Token: token, TTLMs: ttl.Milliseconds()})
	r := l.outcome("acquire", rep, err)
	if !r.Ok() {
		return 0, r
	}
	if l.cfg.Fencing && rep.Fence <= 0 {
		perr := &ProtocolError{Program: ExecProgram(l.cfg.Recipe), Line: 0, Text: fmt.Sprintf("ok acquire of %s", key),
			Why: "fencing is on (--fence) but the ok acquire carries no \"fence\""}
		l.conn.fatal(perr)
		return 0, Result{history.Info, perr}
	}
	if rep.Token != "" && rep.Token != token {
		l.mu.Lock()
		l.tokens[token] = rep.Token
		l.mu.Unlock()
	}
	l.noteValidity(token, rep)
	return rep.Fence, r
}

func (l *execLock) Extend(ctx context.Context, key, token string, ttl time.Duration) Result {
	rep, err := l.call(ctx, execRequest{Op: "extend", Key: key, Token: l.progToken(token), TTLMs: ttl.Milliseconds()})
	r := l.outcome("extend", rep, err)
	if r.Ok() {
		l.noteValidity(token, rep)
	}
	return r
}

// noteValidity keeps an ok reply's validity_ms. A lease reported as 0 or
// less is over: kept as -1 ms at most, since 0 in a history means "none
// reported", and the checker's ownership check counts the grant as handed
// over expired.
func (l *execLock) noteValidity(token string, rep execReply) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rep.ValidityMs == nil {
		delete(l.validity, token)
		return
	}
	v := time.Duration(*rep.ValidityMs) * time.Millisecond
	if v <= 0 {
		v = min(v, -time.Millisecond)
	}
	l.validity[token] = v
}

// Validity implements ValidityReporter: what the program reported, 0 when
// it reported nothing.
func (l *execLock) Validity(token string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validity[token]
}

func (l *execLock) Release(ctx context.Context, key, token string) Result {
	rep, err := l.call(ctx, execRequest{Op: "release", Key: key, Token: l.progToken(token)})
	l.mu.Lock()
	delete(l.tokens, token)
	delete(l.validity, token)
	l.mu.Unlock()
	return l.outcome("release", rep, err)
}

// Breakable is a Lock that can break for good (an exec program that broke
// the protocol or exited): Broken is closed then, and Err says why.
type Breakable interface {
	Broken() <-chan struct{}
	Err() error
}

// probeExec starts the program once, acquires and releases a probe key, and
// refuses the run when fencing is asked for and the program returns no fence.
// The runner calls it (through Check) before any client starts, so a program
// that cannot start or speak is named before the run, not in its middle.
func probeExec(ctx context.Context, cfg Config) error {
	if cfg.TTL <= 0 {
		cfg.TTL = 2 * time.Second
	}
	l, err := openExec(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	if cfg.NeedsPartition && !l.(*execLock).partitions {
		return refuse("%s did not say at init that it takes the \"unreachable\" request, and this run's fault cuts some nodes off from "+
			"some clients in the clients themselves (Redlock's partial partition): without it the fault would run with no partition; "+
			"answer init with \"unreachable\":true once the program sends nothing to the nodes it names (docs/protocol.md)", ExecProgram(cfg.Recipe))
	}
	if cfg.NeedsDialMap && !l.(*execLock).dialMap {
		return refuse("%s did not say at init that it dials through LOCKJEPSEN_DIAL_MAP, and this run's fault slows the replication path alone: "+
			"its operations, sent to the addresses Sentinel hands out, would be slowed with replication; answer init with \"dial_map\":true once the program "+
			"rewrites each address through the map (docs/protocol.md), or use net-latency to slow clients and replication together", ExecProgram(cfg.Recipe))
	}
	for _, mode := range cfg.NeedsReplies {
		if !l.(*execLock).takes(mode) {
			return refuse("%s did not say at init that it takes the %q request, and this run's fault %s: without it the fault "+
				"would never fire; answer init with %q:true once the program does so (docs/protocol.md)",
				ExecProgram(cfg.Recipe), ExecReplyField(mode), replyFaultDoes[mode], ExecReplyField(mode))
		}
	}
	key, tok := KeyPrefix+"{lockjepsen-probe-"+NewToken()[:8]+"}", NewToken()
	// Its own budget, not the capability check's few seconds: on a loaded
	// machine an interpreter's first connection can take a while.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	fencing := cfg.Fencing
	l.(*execLock).cfg.Fencing = false
	fence, r := l.Acquire(octx, key, tok, 2*time.Second)
	if r.Ok() {
		_ = l.Release(octx, key, tok)
	}
	if err := l.(*execLock).Err(); err != nil {
		return err
	}
	if !r.Ok() {
		return fmt.Errorf("%s: the probe acquire of a free key ended %s: %v (lockjepsen client-test %s checks an adapter step by step)",
			ExecProgram(cfg.Recipe), r.Outcome, r.Err, ExecProgram(cfg.Recipe))
	}
	if fencing && fence <= 0 {
		return fmt.Errorf("%s returns no \"fence\" with an ok acquire, and the resource's fence needs one: use --fence none, or return fences (docs/protocol.md)",
			ExecProgram(cfg.Recipe))
	}
	return nil
}
