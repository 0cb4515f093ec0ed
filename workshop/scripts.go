package workshop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// DefaultClusterDir is where `lockjepsen cluster up` keeps its topology; lab 1
// uses a cluster running there, as the attendees would with valkey-cli.
const DefaultClusterDir = ".lockjepsen/cluster"

// DefaultDir is where the labs' runs go, one subfolder per step.
var DefaultDir = filepath.Join(runfolder.Root, "workshop")

// session sends commands with the real valkey-cli, so the replies on the page
// are exactly what attendees see when they type the same lines.
type session struct {
	cli   string
	addr  string
	start time.Time
	t     Transcript
	out   io.Writer
	timed bool // prefix lines with the time since start (the min-replicas window)
	// filter, when set, trims the next reply to what the lesson is about
	// (the EXEC part of a MULTI block, the lag lines of INFO replication).
	filter func(string) string
}

func (s *session) note(format string, a ...any) {
	n := fmt.Sprintf(format, a...)
	s.t.Lines = append(s.t.Lines, Exchange{Note: n, AtS: s.since()})
	fmt.Fprintf(s.out, "# %s\n", n)
}

func (s *session) since() float64 { return time.Since(s.start).Seconds() }

func (s *session) port() string {
	_, p, err := net.SplitHostPort(s.addr)
	if err != nil {
		return s.addr
	}
	return p
}

// do runs one command; stdin, when set, is piped in (a MULTI block), and the
// page then shows the pipe.
func (s *session) do(ctx context.Context, id string, stdin string, args ...string) (string, error) {
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", s.addr, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// --no-raw: the formatted replies ((nil), (integer) 0) a terminal shows,
	// even though our stdout is a pipe.
	cmd := exec.CommandContext(cctx, s.cli, append([]string{"-h", host, "-p", port, "--no-raw"}, args...)...)
	shown := "valkey-cli -p " + port + " " + strings.Join(args, " ")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
		shown = "printf '" + strings.ReplaceAll(stdin, "\n", `\n`) + "' | valkey-cli -p " + port
	}
	at := s.since()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w (%s)", shown, err, strings.TrimSpace(string(b)))
	}
	reply := strings.TrimRight(string(b), "\n")
	if s.filter != nil {
		reply, s.filter = s.filter(reply), nil
	}
	s.t.Lines = append(s.t.Lines, Exchange{ID: id, Command: shown, Reply: reply, AtS: at})
	if s.timed {
		fmt.Fprintf(s.out, "[+%5.2fs] %s\n", at, shown)
	} else {
		fmt.Fprintf(s.out, "$ %s\n", shown)
	}
	fmt.Fprintln(s.out, reply)
	return reply, nil
}

func token() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// topology returns a live local cluster: the one `lockjepsen cluster up` left
// in existing when it answers, else a private one in dir that the returned
// stop function takes down again.
func topology(ctx context.Context, existing, dir string, cfg cluster.Config) (*cluster.Local, cluster.Binaries, func(), error) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		return nil, bins, nil, err
	}
	if existing != "" {
		if l, err := cluster.LoadLocal(existing, bins); err == nil {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, perr := l.Primary(pctx)
			cancel()
			if perr == nil {
				return l, bins, func() {}, nil
			}
		}
	}
	cfg.Dir = filepath.Join(dir, runfolder.Cluster)
	l, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		return nil, bins, nil, err
	}
	if err := l.Up(ctx); err != nil {
		_ = l.Down()
		return nil, bins, nil, fmt.Errorf("cluster up: %w", err)
	}
	return l, bins, func() { _ = l.Down() }, nil
}

// runScript carries out a by-hand lab in dir and writes transcript.json.
func runScript(ctx context.Context, name, dir string, opt Options, out io.Writer) error {
	var err error
	var t *Transcript
	switch name {
	case "lock-by-hand":
		t, err = lockByHand(ctx, dir, opt, out)
	case "min-replicas-window":
		t, err = minReplicasWindow(ctx, dir, out)
	default:
		return fmt.Errorf("unknown lab script %q", name)
	}
	if t != nil {
		if werr := t.write(filepath.Join(dir, TranscriptFile)); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// lockByHand is lab 1: the Valkey 9 lock article's commands, including the two mistakes it
// warns about, against a real primary.
func lockByHand(ctx context.Context, dir string, opt Options, out io.Writer) (*Transcript, error) {
	l, bins, stop, err := topology(ctx, opt.ClusterDir, dir, cluster.Defaults())
	if err != nil {
		return nil, err
	}
	defer stop()
	p, err := l.Primary(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the primary: %w", err)
	}
	if l.Config().Dir == filepath.Join(dir, runfolder.Cluster) {
		fmt.Fprintf(out, "(no 'lockjepsen cluster up' topology answered in %s: using a private one on port %s)\n\n", opt.ClusterDir, portOnly(p.Addr))
	}
	s := &session{cli: bins.CLI, addr: p.Addr, start: time.Now(), out: out}
	const key = "lock:{invoice-run}"
	a, b := token(), token()
	// A lock left over from an earlier attendee's session would make the
	// first SET NX answer (nil): start from a free key.
	if _, err := l.Command(ctx, p.Name, "DEL", key); err != nil {
		return nil, fmt.Errorf("clear %s: %w", key, err)
	}
	steps := []struct {
		id, note, stdin string
		args            []string
	}{
		{note: "client A acquires: a new random token for every acquisition", id: "acquire-a", args: []string{"SET", key, a, "NX", "PX", "30000"}},
		{note: "client B tries the same lock", id: "acquire-b", args: []string{"SET", key, b, "NX", "PX", "30000"}},
		{note: "A extends: only if it still holds the lock, and with a fresh PX", id: "extend", args: []string{"SET", key, a, "IFEQ", a, "PX", "30000"}},
		{id: "pttl-extend", args: []string{"PTTL", key}},
		{note: "the mistake: an extend without PX", id: "extend-no-px", args: []string{"SET", key, a, "IFEQ", a}},
		{id: "pttl-no-px", args: []string{"PTTL", key}},
		{note: "repair it: extend again with PX", id: "repair", args: []string{"SET", key, a, "IFEQ", a, "PX", "30000"}},
		{id: "pttl-repaired", args: []string{"PTTL", key}},
		{note: "B, whose token is stale, tries to release", id: "stale-release", args: []string{"DELIFEQ", key, b}},
		{id: "still-held", args: []string{"GET", key}},
		{note: "A releases", id: "release", args: []string{"DELIFEQ", key, a}},
		{note: "a late extend cannot bring the lock back", id: "late-extend", args: []string{"SET", key, a, "IFEQ", a, "PX", "30000"}},
		{note: "fenced acquire: the lock and a fencing number in one MULTI", id: "fenced", stdin: "MULTI\nSET " + key + " " + a + " NX PX 30000\nINCR fence:{invoice-run}\nEXEC\n"},
		{note: "B's fenced acquire is refused, but the counter moves anyway", id: "fenced-refused", stdin: "MULTI\nSET " + key + " " + b + " NX PX 30000\nINCR fence:{invoice-run}\nEXEC\n"},
		{note: "A releases", id: "release-fenced", args: []string{"DELIFEQ", key, a}},
	}
	for _, st := range steps {
		if st.note != "" {
			s.note("%s", st.note)
		}
		if st.stdin != "" {
			s.filter = execReply
		}
		if _, err := s.do(ctx, st.id, st.stdin, st.args...); err != nil {
			return &s.t, err
		}
	}
	return &s.t, nil
}

// execReply keeps the EXEC part of a piped MULTI block's output.
func execReply(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "1) ") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return out
}

// lagLines keeps the lines of INFO replication that show the replicas' lag.
func lagLines(info string) string {
	var keep []string
	for _, ln := range strings.Split(info, "\n") {
		ln = strings.TrimSpace(ln)
		if strings.HasPrefix(ln, "slave") || strings.HasPrefix(ln, "min_slaves_good_slaves") || strings.HasPrefix(ln, "connected_slaves") {
			keep = append(keep, ln)
		}
	}
	return strings.Join(keep, "\n")
}

func portOnly(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return p
}

// WindowMaxLag is lab 4's min-replicas-max-lag, short so the lab is too.
const WindowMaxLag = 3

// minReplicasWindow is lab 4's first half: freeze both replicas (SIGSTOP keeps
// their connections open, as a hung host would) and time how long the primary
// keeps acknowledging lock writes that nobody copies.
func minReplicasWindow(ctx context.Context, dir string, out io.Writer) (*Transcript, error) {
	cfg := cluster.Defaults()
	cfg.MinReplicasToWrite, cfg.MinReplicasMaxLag = 1, WindowMaxLag
	// Always a private topology: this lab freezes replicas, which would
	// disturb an attendee's own `cluster up` session.
	l, bins, stop, err := topology(ctx, "", dir, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	p, err := l.Primary(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the primary: %w", err)
	}
	s := &session{cli: bins.CLI, addr: p.Addr, start: time.Now(), out: out, timed: true}
	if _, err := s.do(ctx, "config", "", "CONFIG", "GET", "min-replicas-*"); err != nil {
		return &s.t, err
	}
	if _, err := s.do(ctx, "before", "", "SET", "lock:{job-0}", token(), "NX", "PX", "30000"); err != nil {
		return &s.t, err
	}
	var replicas []string
	for _, n := range l.Nodes() {
		if !n.Watches() && n.Name != p.Name {
			replicas = append(replicas, n.Name)
		}
	}
	for _, r := range replicas {
		if err := l.Pause(r); err != nil {
			return &s.t, fmt.Errorf("freeze %s: %w", r, err)
		}
	}
	defer func() {
		for _, r := range replicas {
			_ = l.Resume(r)
		}
	}()
	frozen := s.since()
	s.note("SIGSTOP %s: the replicas stop acknowledging, their connections stay open", strings.Join(replicas, ", "))
	last := 0.0
	refused := false
	deadline := time.Now().Add(time.Duration(WindowMaxLag+5) * time.Second)
	for i := 1; time.Now().Before(deadline); i++ {
		reply, err := s.do(ctx, fmt.Sprintf("write-%d", i), "", "SET", fmt.Sprintf("lock:{job-%d}", i), token(), "NX", "PX", "30000")
		if err != nil {
			return &s.t, err
		}
		if strings.HasPrefix(reply, "(error) NOREPLICAS") {
			s.t.Lines[len(s.t.Lines)-1].ID = "first-refusal"
			refused = true
			break
		}
		last = s.t.Lines[len(s.t.Lines)-1].AtS
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return &s.t, err
		}
	}
	s.filter = lagLines
	if _, err := s.do(ctx, "lag", "", "INFO", "replication"); err != nil {
		return &s.t, err
	}
	s.t.Figures = map[string]float64{"window_s": last - frozen, "max_lag_s": WindowMaxLag}
	if refused {
		s.note("the primary acknowledged writes for %.1f s after the replicas froze (max-lag %d s); a failover now loses all of them", last-frozen, WindowMaxLag)
	} else {
		s.note("no NOREPLICAS within %d s", WindowMaxLag+5)
	}
	return &s.t, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
