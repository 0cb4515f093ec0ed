package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/lock"
)

// Runtime runs the deployment as processes on 127.0.0.1: two postmasters
// and, with a pooler, one PgBouncer, each in its own process group (a
// postmaster's backends are its children, so a signal to the group reaches
// the whole server: SIGSTOP pauses every session, SIGKILL ends them all)
// with a parent-death signal, run as the postgres user (neither server runs
// as root). Their data lives in a folder of its own under the temporary
// directory, which the postgres user can reach whatever the run folder's
// permissions; the logs are written into the run folder.
type Runtime struct {
	cfg     cluster.Config
	pooler  string
	bin     string // PostgreSQL's bin folder
	bouncer string // pgbouncer
	version string
	data    string // data root, owned by postgres
	cred    *syscall.Credential

	mu      sync.Mutex
	nodes   []cluster.Node
	ports   map[string]int
	procs   map[string]*cluster.Proc
	primary string // the node the clients' writes go to, as promotion left it
}

var _ cluster.Runtime = (*Runtime)(nil)

func newRuntime(c cluster.Config) (*Runtime, error) {
	if c.Dir == "" {
		return nil, fmt.Errorf("postgres runtime: no run directory")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	bin, major, err := FindPostgres()
	if err != nil {
		return nil, err
	}
	r := &Runtime{cfg: c, pooler: pooler(c), bin: bin, ports: map[string]int{}, procs: map[string]*cluster.Proc{}, primary: nodePrimary}
	r.version = fmt.Sprintf("PostgreSQL %d", major)
	if r.pooler != PoolerNone {
		if r.bouncer, err = FindPgBouncer(); err != nil {
			return nil, err
		}
		r.version += ", " + bouncerVersion(r.bouncer)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("PostgreSQL refuses to run as root, and there is no postgres user to run it as: install Debian's postgresql package, which creates it (%w)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if r.cfg.Dir, err = filepath.Abs(c.Dir); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	ports, err := cluster.FreePorts(c.BasePort, 3)
	if err != nil {
		return nil, err
	}
	for i, n := range (deployment{}).Layout(c) {
		n.Addr = "127.0.0.1:" + strconv.Itoa(ports[i])
		n.LogFile = filepath.Join(r.cfg.Dir, n.Name, n.Name+".log")
		n.Dir = filepath.Join(r.cfg.Dir, n.Name)
		r.ports[n.Name] = ports[i]
		r.nodes = append(r.nodes, n)
	}
	return r, nil
}

func bouncerVersion(bin string) string {
	out, _ := exec.Command(bin, "--version").Output()
	if f := strings.Fields(string(out)); len(f) >= 2 {
		return "PgBouncer " + f[1]
	}
	return "PgBouncer"
}

// DSN is the connection string the lock clients get: the pooler's, or
// both servers with target_session_attrs=read-write, so that a client that
// reconnects after a promotion finds the new primary.
func (r *Runtime) DSN() string {
	if r.pooler != PoolerNone {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", r.ports[nodePooler])
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2&target_session_attrs=read-write",
		r.ports[nodePrimary], r.ports[nodeReplica])
}

// nodeDSN reaches one server directly (the harness's own questions).
func (r *Runtime) nodeDSN(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", r.ports[name])
}

func (r *Runtime) dataDir(name string) string { return filepath.Join(r.data, name) }

// run runs a PostgreSQL tool as the postgres user, its output into log.
func (r *Runtime) run(ctx context.Context, log string, bin string, args ...string) error {
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = r.data
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: r.cred}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w (see %s)", filepath.Base(bin), strings.Join(args, " "), err, log)
	}
	return nil
}

// spawn starts a server in its own process group, as the postgres user.
func (r *Runtime) spawn(name, bin string, args ...string) error {
	n, _ := r.Node(name)
	p, err := cluster.Spawn{Bin: bin, Args: args, Dir: r.data, Log: n.LogFile, Credential: r.cred}.Start()
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	r.mu.Lock()
	r.procs[name] = p
	r.setNode(name, func(n *cluster.Node) { n.PID, n.Killed, n.Paused = p.PID(), false, false })
	r.mu.Unlock()
	// The state file lists every process the run started, restarts too.
	return cluster.SaveState(r.cfg, r.version, r.Nodes())
}

func (r *Runtime) setNode(name string, f func(*cluster.Node)) {
	for i := range r.nodes {
		if r.nodes[i].Name == name {
			f(&r.nodes[i])
		}
	}
}

func (r *Runtime) chown(path string) error {
	if r.cred == nil {
		return nil
	}
	return os.Chown(path, int(r.cred.Uid), int(r.cred.Gid))
}

// Up initialises the primary, copies it into the replica with
// pg_basebackup, starts both and the pooler, and waits until all answer.
func (r *Runtime) Up(ctx context.Context) error {
	var err error
	if r.data, err = os.MkdirTemp("", "lockjepsen-pg-"); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	if err := r.chown(r.data); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	for _, n := range r.Nodes() {
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
	}
	primaryLog := r.mustNode(nodePrimary).LogFile
	if err := r.run(ctx, primaryLog, filepath.Join(r.bin, "initdb"), "-D", r.dataDir(nodePrimary), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	if err := r.writeConf(nodePrimary); err != nil {
		return err
	}
	if err := r.startServer(nodePrimary); err != nil {
		return err
	}
	if err := r.waitAnswer(ctx, nodePrimary); err != nil {
		return err
	}
	if _, err := r.Command(ctx, nodePrimary, "CREATE SEQUENCE IF NOT EXISTS "+lock.FenceSequence); err != nil {
		return err
	}
	if err := r.cloneReplica(ctx, nodeReplica, nodePrimary); err != nil {
		return err
	}
	if r.pooler != PoolerNone {
		if err := r.startPooler(); err != nil {
			return err
		}
	}
	return r.WaitReady(ctx)
}

// writeConf writes the settings every server runs with: the node's own
// port and socket folder, and replication on. fsync is off: a killed
// postmaster keeps what the kernel holds; only a crashed machine would
// lose it, which no fault here makes.
func (r *Runtime) writeConf(name string) error {
	conf := fmt.Sprintf(`
# lockjepsen
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
wal_level = replica
max_wal_senders = 4
hot_standby = on
fsync = off
full_page_writes = off
max_connections = 200
logging_collector = off
log_line_prefix = '%%m [%%p] %%a '
`, r.ports[name], r.dataDir(name))
	f, err := os.OpenFile(filepath.Join(r.dataDir(name), "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%s config: %w", name, err)
	}
	defer f.Close()
	_, err = f.WriteString(conf)
	return err
}

func (r *Runtime) startServer(name string) error {
	return r.spawn(name, filepath.Join(r.bin, "postgres"), "-D", r.dataDir(name))
}

// cloneReplica makes name a streaming replica of from: a fresh
// pg_basebackup (-R writes standby.signal and primary_conninfo), then its
// own port. It is how a former primary rejoins too: simpler than
// pg_rewind, and the database is small.
func (r *Runtime) cloneReplica(ctx context.Context, name, from string) error {
	dir := r.dataDir(name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := r.run(ctx, r.mustNode(name).LogFile, filepath.Join(r.bin, "pg_basebackup"), "-h", "127.0.0.1",
		"-p", strconv.Itoa(r.ports[from]), "-U", "postgres", "-D", dir, "-R", "-X", "stream", "--no-sync"); err != nil {
		return err
	}
	if err := r.writeConf(name); err != nil {
		return err
	}
	r.mu.Lock()
	r.setNode(name, func(n *cluster.Node) { n.Kind = cluster.RoleReplica })
	r.mu.Unlock()
	return r.startServer(name)
}

// poolerConf points PgBouncer at the current primary. Session mode needs a
// server connection per client; transaction mode shares them, and hands
// out the most recently used first (server_round_robin = 0), so a few
// server connections serve every client in turn.
func (r *Runtime) poolerConf() error {
	// In the data folder, not the run folder: PgBouncer, run as the postgres
	// user, reads them itself, and a run folder may be closed to it.
	dir := r.dataDir(nodePooler)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	users := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(users, []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		return err
	}
	ini := fmt.Sprintf(`[databases]
postgres = host=127.0.0.1 port=%d dbname=postgres user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = 40
max_client_conn = 400
admin_users = postgres
ignore_startup_parameters = extra_float_digits
server_login_retry = 1
`, r.ports[r.currentPrimary()], r.ports[nodePooler], users, r.pooler)
	tmp := filepath.Join(dir, "pgbouncer.ini.tmp")
	if err := os.WriteFile(tmp, []byte(ini), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "pgbouncer.ini"))
}

func (r *Runtime) startPooler() error {
	if err := r.poolerConf(); err != nil {
		return fmt.Errorf("pgbouncer config: %w", err)
	}
	return r.spawn(nodePooler, r.bouncer, filepath.Join(r.dataDir(nodePooler), "pgbouncer.ini"))
}

func (r *Runtime) currentPrimary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.primary
}

func (r *Runtime) mustNode(name string) cluster.Node {
	n, ok := r.Node(name)
	if !ok {
		panic("postgres: no node " + name)
	}
	return n
}

// waitAnswer waits until a server (or the pooler) answers SELECT 1.
func (r *Runtime) waitAnswer(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		if _, last = r.Command(ctx, name, "SELECT 1"); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer within 30s: %w", name, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Down stops every process: SIGQUIT to each postmaster (immediate shutdown:
// its backends go with it, its shared memory is removed), then SIGKILL to
// whatever of each group is left; the data folder goes too.
func (r *Runtime) Down() error {
	r.mu.Lock()
	procs := make(map[string]*cluster.Proc, len(r.procs))
	for k, v := range r.procs {
		procs[k] = v
	}
	r.mu.Unlock()
	// A paused server's backends are stopped one by one (each called
	// setsid(), outside the postmaster's group): continued with the group
	// alone they stayed stopped, and outlived the postmaster for good
	// (found after pg-promote runs, state T, parent 1). Every child is
	// continued, and killed with the postmaster if it lingers.
	kids := map[string][]int{}
	for name, p := range procs {
		kids[name] = children(p.PID())
		for _, c := range kids[name] {
			_ = syscall.Kill(c, syscall.SIGCONT)
		}
		_ = syscall.Kill(-p.PID(), syscall.SIGCONT)
		_ = p.Signal(syscall.SIGQUIT)
	}
	for name, p := range procs {
		select {
		case <-p.Done():
		case <-time.After(3 * time.Second):
		}
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		for _, c := range kids[name] {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		<-p.Done()
		r.mu.Lock()
		r.setNode(name, func(n *cluster.Node) { n.PID = 0 })
		r.mu.Unlock()
	}
	if r.data != "" {
		return os.RemoveAll(r.data)
	}
	return nil
}

func (r *Runtime) Nodes() []cluster.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]cluster.Node, len(r.nodes))
	copy(out, r.nodes)
	return out
}

func (r *Runtime) Node(name string) (cluster.Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nodes {
		if n.Name == name {
			return n, true
		}
	}
	return cluster.Node{}, false
}

func (r *Runtime) WatcherAddrs() []string { return nil }
func (r *Runtime) Version() string        { return r.version }

// signal sends sig to name's process group and to every child of its
// leader: a postmaster's backends call setsid() (each its own session, so
// that the postmaster can signal a backend's children), so its group alone
// does not reach them. The leader is stopped first and continued last, so
// that it forks no backend the signal misses.
func (r *Runtime) signal(name string, sig syscall.Signal) (*cluster.Proc, error) {
	r.mu.Lock()
	p := r.procs[name]
	r.mu.Unlock()
	if p == nil || p.Exited() {
		return nil, fmt.Errorf("%s is not running", name)
	}
	pid := p.PID()
	send := func(target int) error {
		if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %v to %s: %w", sig, name, err)
		}
		return nil
	}
	// The children first: once the postmaster is gone they belong to
	// init, where a scan by parent no longer finds them, and a frozen
	// backend missed here stays stopped for good.
	kids := children(pid)
	if sig != syscall.SIGCONT {
		if err := send(-pid); err != nil {
			return nil, err
		}
	}
	for _, c := range kids {
		if err := send(c); err != nil {
			return nil, err
		}
	}
	if sig == syscall.SIGCONT {
		if err := send(-pid); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// children lists the processes whose parent is pid (from /proc).
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) start at ") ":
		// state, then ppid.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

func (r *Runtime) Kill(name string) error {
	p, err := r.signal(name, syscall.SIGKILL)
	if err != nil {
		return err
	}
	<-p.Done()
	r.mu.Lock()
	r.setNode(name, func(n *cluster.Node) { n.PID, n.Killed, n.Paused = 0, true, false })
	r.mu.Unlock()
	return nil
}

func (r *Runtime) Pause(name string) error {
	if _, err := r.signal(name, syscall.SIGSTOP); err != nil {
		return err
	}
	r.mu.Lock()
	r.setNode(name, func(n *cluster.Node) { n.Paused = true })
	r.mu.Unlock()
	return nil
}

func (r *Runtime) Resume(name string) error {
	if _, err := r.signal(name, syscall.SIGCONT); err != nil {
		return err
	}
	r.mu.Lock()
	r.setNode(name, func(n *cluster.Node) { n.Paused = false })
	r.mu.Unlock()
	return nil
}

// Stop shuts a server down fast (SIGINT: a postmaster's fast shutdown, which
// ends its sessions; PgBouncer's shutdown) and waits for it.
func (r *Runtime) Stop(name string) error {
	p, err := r.signal(name, syscall.SIGCONT)
	if err != nil {
		return err
	}
	_ = p.Signal(syscall.SIGINT)
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.Done()
	}
	r.mu.Lock()
	r.setNode(name, func(n *cluster.Node) { n.PID, n.Killed = 0, true })
	r.mu.Unlock()
	return nil
}

// Restart starts a node that is down. A server that is no longer the
// primary rejoins as a fresh replica of the one that is (AsReplica), or
// comes back with its own data (WithOldConfig): a former primary then
// serves writes beside the promoted one, split brain.
func (r *Runtime) Restart(ctx context.Context, name string, mode cluster.RestartMode) error {
	if n, ok := r.Node(name); !ok || n.PID != 0 {
		return fmt.Errorf("restart %s: not down", name)
	}
	if name == nodePooler {
		if err := r.startPooler(); err != nil {
			return err
		}
		return r.waitAnswer(ctx, name)
	}
	if p := r.currentPrimary(); p != name && mode == cluster.AsReplica {
		if err := r.cloneReplica(ctx, name, p); err != nil {
			return err
		}
		return r.waitAnswer(ctx, name)
	}
	if err := r.startServer(name); err != nil {
		return err
	}
	return r.waitAnswer(ctx, name)
}

func (r *Runtime) SetClockOffset(string, string) error { return ErrClock }

// Primary is the server that takes the clients' writes: the one promotion
// left as primary, if it is up and out of recovery.
func (r *Runtime) Primary(ctx context.Context) (cluster.Node, error) {
	name := r.currentPrimary()
	out, err := r.Command(ctx, name, "SELECT pg_is_in_recovery()")
	if err != nil {
		return cluster.Node{}, err
	}
	if out != "false" {
		return cluster.Node{}, fmt.Errorf("%s is in recovery", name)
	}
	n, _ := r.Node(name)
	return n, nil
}

// WaitFailover waits until a server other than from is the primary: no
// manager promotes one here on its own, so only the promote fault does.
func (r *Runtime) WaitFailover(ctx context.Context, from string) (cluster.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if n, err := r.Primary(ctx); err == nil && n.Name != from {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return cluster.Node{}, fmt.Errorf("no server other than %s became primary: %w", from, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitReady waits until the primary answers, every live replica streams
// from it, and the pooler (if any, and up) answers through to it.
func (r *Runtime) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		if last = r.readyOnce(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready within 30s: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *Runtime) readyOnce(ctx context.Context) error {
	p, err := r.Primary(ctx)
	if err != nil {
		return err
	}
	want := 0
	for _, n := range r.Nodes() {
		if n.Name != p.Name && n.Kind == cluster.RoleReplica && n.PID != 0 {
			want++
		}
	}
	got, err := r.Command(ctx, p.Name, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
	if err != nil {
		return err
	}
	if got != strconv.Itoa(want) {
		return fmt.Errorf("%s streams to %s of %d replicas", p.Name, got, want)
	}
	if n, ok := r.Node(nodePooler); ok && n.PID != 0 && !n.Paused {
		if _, err := r.Command(ctx, nodePooler, "SELECT 1"); err != nil {
			return err
		}
	}
	return nil
}

// CollectLogs copies each node's log (written into the run folder as it
// runs) into dst, as <node>.log.
func (r *Runtime) CollectLogs(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	for _, n := range r.Nodes() {
		if err := cluster.CopyFile(n.LogFile, filepath.Join(dst, n.Name+".log")); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// Command runs one SQL statement on a node (its first argument; more are
// joined with spaces) and returns the first column of its rows, one per
// line.
func (r *Runtime) Command(ctx context.Context, name string, args ...string) (string, error) {
	if _, ok := r.Node(name); !ok {
		return "", fmt.Errorf("no node %s", name)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cc, err := pgx.ParseConfig(r.nodeDSN(name))
	if err != nil {
		return "", err
	}
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cc.RuntimeParams["application_name"] = "lockjepsen-harness"
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	defer c.Close(ctxTODO())
	rows, err := c.Query(ctx, strings.Join(args, " "))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if len(vals) > 0 {
			out = append(out, fmt.Sprint(vals[0]))
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return strings.Join(out, "\n"), nil
}
