package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// The deployment's own faults, each a mechanism over a target: a session
// ended under its holder (the holder's backend terminated, every session
// through a restarted pooler), the primary frozen while its replica is
// promoted, the pooler paused.

// CauseSessionEnded is what a stale write after a session's end is blamed
// on: the server released the lock honestly, and the holder worked on until
// its next statement told it.
const CauseSessionEnded = "session-ended"

// Events the faults log.
const (
	evTerminate     = "pg-terminate-backend"
	evTerminated    = "pg-backend-gone"
	evSessionEnded  = "pg-session-ended"
	evPromote       = "pg-promote"
	evPromoted      = "pg-promoted"
	evPausePooler   = "pause-pooler"
	evResumePooler  = "resume-pooler"
	evRestartPooler = "restart-pooler"
	evPoolerBack    = "pooler-restarted"
	evConnDropped   = "pg-conn-dropped"      // the session ends with it: the lock is released
	evConnDropKept  = "pg-conn-dropped-kept" // transaction pooling: the server connection keeps it
	evConnDropDone  = "pg-conn-drop-done"
)

var faultTerminateHolder = &nemesis.Fault{
	Name:  "pg-terminate-holder",
	Needs: nemesis.Needs{Topology: Topology},
	Marks: []nemesis.Mark{{Event: evTerminate, Heal: evTerminated, Cause: CauseSessionEnded, Revokes: true}},
	Doc: "pg_terminate_backend on the session that holds a lock (found in pg_locks): the server releases the lock " +
		"honestly, and the holder learns of it at its next statement",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return p.TTL + time.Second },
	Inject:   runTerminateHolder,
}

var faultPromote = &nemesis.Fault{
	Name:     "pg-promote",
	As:       "pause-leader",
	Failover: true, Needs: nemesis.Needs{Replicas: 1, Topology: Topology},
	Kind:  "failover",
	Marks: []nemesis.Mark{{Event: evPromote, Heal: evPromoted, Cause: nemesis.CauseFailover}},
	Doc: "a failover manager's promotion: the primary frozen (SIGSTOP, its sessions and their locks alive), the " +
		"replica promoted (it has none of the advisory locks: they are not replicated), the pooler repointed; after " +
		"twice the TTL the old primary is killed and rejoins as a replica",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return 2*p.TTL + 8*time.Second },
	Inject:   runPromote,
}

var faultPausePooler = &nemesis.Fault{
	Name:  "pause-pooler",
	Needs: nemesis.Needs{Topology: Topology, Config: needsPooler},
	Marks: []nemesis.Mark{{Event: evPausePooler, Heal: evResumePooler, Cause: marks.CauseNetwork}},
	Doc:   "SIGSTOP PgBouncer for longer than the TTL, then SIGCONT: every statement waits, the sessions and their locks live on",
	PlanStep: func(rng *rand.Rand, p nemesis.PlanParams) nemesis.Step {
		return nemesis.Step{Duration: p.TTL + time.Duration(rng.Int64N(int64(p.TTL)+1))}
	},
	Span:   func(s nemesis.Step, _ nemesis.PlanParams) time.Duration { return s.Duration + time.Second },
	Inject: runPausePooler,
}

var faultRestartPooler = &nemesis.Fault{
	Name:  "restart-pooler",
	Needs: nemesis.Needs{Topology: Topology, Config: needsPooler},
	Marks: []nemesis.Mark{
		{Event: evRestartPooler, Heal: evPoolerBack, Cause: CauseSessionEnded},
		{Event: evSessionEnded, Heal: evPoolerBack, Cause: CauseSessionEnded, Revokes: true},
	},
	Doc: "SIGKILL PgBouncer and start it again: its server connections close, so PostgreSQL ends their sessions " +
		"and releases their locks; the clients learn at their next statement",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return p.TTL + 2*time.Second },
	Inject:   runRestartPooler,
}

var faultDropConn = &nemesis.Fault{
	Name:  "pg-drop-conn",
	Needs: nemesis.Needs{Topology: Topology},
	Marks: []nemesis.Mark{
		{Event: evConnDropped, Heal: evConnDropDone, Cause: CauseSessionEnded, Revokes: true},
		{Event: evConnDropKept, Heal: evConnDropDone, Cause: marks.CauseNetwork},
	},
	Doc: "a fresh holder's connection closed from its own side, as a NAT or a load balancer that forgets it does: " +
		"PostgreSQL (or PgBouncer in session mode, by its reset query) ends the session and releases the lock honestly, " +
		"and the holder learns at its next statement; behind PgBouncer in transaction mode the lock stays on the " +
		"pooled server connection, held by nobody",
	PlanStep: func(*rand.Rand, nemesis.PlanParams) nemesis.Step { return nemesis.Step{} },
	Span:     func(_ nemesis.Step, p nemesis.PlanParams) time.Duration { return p.TTL + time.Second },
	Inject:   runDropConn,
}

// runDropConn closes a fresh holder's connections. The revoking event goes
// first, as pg-terminate-holder's does: the server releases the lock when it
// reads the end of the stream, after the client closed it.
func runDropConn(ctx context.Context, env nemesis.Env, _ nemesis.Step) error {
	r, err := pgRuntime(env)
	if err != nil {
		return err
	}
	ce, err := nemesis.ClientControls(env)
	if err != nil {
		return err
	}
	h, err := nemesis.FreshHolder(ctx, env)
	if err != nil {
		return err
	}
	ev, what := evConnDropped, "the session ends, and its lock with it"
	if r.pooler == PoolerTransaction {
		ev, what = evConnDropKept, "PgBouncer keeps the server connection, and the lock on it"
	}
	node := nemesis.ClientNode(h.Client)
	logEvent(env, ev, node, "client", history.Event{Key: h.Key, Client: h.Client},
		"client %d, holder of %s, loses its connection from its own side: %s", h.Client, h.Key, what)
	if err := ce.DropConns(h.Client); err != nil {
		return err
	}
	sleepErr := nemesis.Sleep(ctx, env.TTL())
	logEvent(env, evConnDropDone, node, "client", history.Event{}, "client %d's drop window closed", h.Client)
	return sleepErr
}

func needsPooler(c cluster.Config) error {
	if pooler(c) == PoolerNone {
		return fmt.Errorf("acts on PgBouncer, and this run has none: add --pooler session or --pooler transaction")
	}
	return nil
}

func init() {
	nemesis.RegisterCause(marks.Cause{Name: CauseSessionEnded, Rank: 6, Text: "The server ended the holder's session%s " +
		"(its backend terminated, or the pooler's connection to it closed), which released its lock honestly; the holder " +
		"learned of it only at its next statement and worked on meanwhile."})
	nemesis.Register(faultTerminateHolder, faultPromote, faultPausePooler, faultRestartPooler, faultDropConn)
}

func pgRuntime(env nemesis.Env) (*Runtime, error) {
	r, ok := env.Cluster().(*Runtime)
	if !ok {
		return nil, fmt.Errorf("this run is not on --topology postgres")
	}
	return r, nil
}

func logEvent(env nemesis.Env, f, node, role string, e history.Event, format string, a ...any) {
	e.F, e.Node, e.Role, e.Detail = f, node, role, fmt.Sprintf(format, a...)
	env.Log(e)
}

// awaitHolder waits up to 5 s for a client to hold a lock.
func awaitHolder(ctx context.Context, env nemesis.Env) (nemesis.Holder, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		if hs := env.Holders(); len(hs) > 0 {
			return hs[0], nil
		}
		select {
		case <-ctx.Done():
			return nemesis.Holder{}, fmt.Errorf("no client held a lock within 5s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lockHolder is a session holding an advisory lock, as pg_locks shows it.
type lockHolder struct {
	pid    int
	client int // from the session's application_name; -1 for none
	key    int64
}

// holders lists the sessions holding advisory locks on the primary.
func (r *Runtime) holders(ctx context.Context) ([]lockHolder, error) {
	out, err := r.Command(ctx, r.currentPrimary(), `SELECT l.pid || ' ' || coalesce(a.application_name, '') || ' ' ||
		((l.classid::bigint << 32) | l.objid::bigint) FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1`)
	if err != nil {
		return nil, err
	}
	var hs []lockHolder
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		h := lockHolder{client: -1}
		h.pid, _ = strconv.Atoi(f[0])
		h.key, _ = strconv.ParseInt(f[2], 10, 64)
		if c, ok := strings.CutPrefix(f[1], lock.ApplicationName(0)[:len(lock.ApplicationName(0))-1]); ok {
			if n, err := strconv.Atoi(c); err == nil {
				h.client = n
			}
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// keyNames maps advisory keys back to lock keys: the keys the holders the
// runner knows of hold, and the workload's own key names.
func keyNames(env nemesis.Env) map[int64]string {
	m := map[int64]string{}
	for i := 0; i <= 64; i++ {
		k := fmt.Sprintf("lock:{job-%d}", i)
		m[lock.AdvisoryKey(k)] = k
	}
	for _, h := range env.Holders() {
		m[lock.AdvisoryKey(h.Key)] = h.Key
	}
	return m
}

func runTerminateHolder(ctx context.Context, env nemesis.Env, _ nemesis.Step) error {
	r, err := pgRuntime(env)
	if err != nil {
		return err
	}
	h, err := awaitHolder(ctx, env)
	if err != nil {
		return err
	}
	hs, err := r.holders(ctx)
	if err != nil {
		return err
	}
	for _, s := range hs {
		if s.client != h.Client || s.key != lock.AdvisoryKey(h.Key) {
			continue
		}
		p := r.currentPrimary()
		logEvent(env, evTerminate, p, string(cluster.RolePrimary), history.Event{Key: h.Key, Client: h.Client},
			"pg_terminate_backend(%d): client %d's session, holder of %s", s.pid, h.Client, h.Key)
		// The timeout makes the call wait for the backend's exit, when its
		// locks go: the heal's time bounds the release the checker reads.
		if _, err := r.Command(ctx, p, "SELECT pg_terminate_backend("+strconv.Itoa(s.pid)+", 5000)"); err != nil {
			return err
		}
		logEvent(env, evTerminated, p, string(cluster.RolePrimary), history.Event{}, "backend %d gone", s.pid)
		return nil
	}
	// The holder released between the two looks: nothing to end this time.
	logEvent(env, evTerminated, r.currentPrimary(), string(cluster.RolePrimary), history.Event{},
		"client %d no longer held %s when its session was looked for", h.Client, h.Key)
	return nil
}

func runPromote(ctx context.Context, env nemesis.Env, _ nemesis.Step) error {
	r, err := pgRuntime(env)
	if err != nil {
		return err
	}
	if _, err := awaitHolder(ctx, env); err != nil {
		return err
	}
	old := r.currentPrimary()
	next := nodeReplica
	if old == nodeReplica {
		next = nodePrimary
	}
	logEvent(env, evPromote, old, string(cluster.RolePrimary), history.Event{},
		"SIGSTOP %s (its sessions keep their locks), promote %s, repoint the pooler", old, next)
	if err := r.Pause(old); err != nil {
		return err
	}
	if err := r.promote(ctx, next); err != nil {
		return err
	}
	logEvent(env, evPromoted, next, string(cluster.RolePrimary), history.Event{}, "%s is the primary", next)
	// The failover observation every failover fault logs (a sweep counts
	// its opportunities by it): without it a pg-promote trial counted 0
	// failovers, and its cell could never reach the stopping rule.
	logEvent(env, history.NFailover, next, string(cluster.RolePrimary), history.Event{}, "%s promoted; %s, frozen, was primary", next, old)
	if err := nemesis.Sleep(ctx, 2*env.TTL()); err != nil {
		return err
	}
	if err := r.Kill(old); err != nil {
		return err
	}
	return r.Restart(ctx, old, cluster.AsReplica)
}

// promote makes name the primary (pg_promote waits for it) and repoints the
// pooler at it: what a failover manager does.
func (r *Runtime) promote(ctx context.Context, name string) error {
	if _, err := r.Command(ctx, name, "SELECT pg_promote(true, 10)"); err != nil {
		return fmt.Errorf("promote %s: %w", name, err)
	}
	r.mu.Lock()
	r.primary = name
	r.setNode(name, func(n *cluster.Node) { n.Kind = cluster.RolePrimary })
	r.mu.Unlock()
	if n, ok := r.Node(nodePooler); ok && n.PID != 0 {
		if err := r.poolerConf(); err != nil {
			return err
		}
		// SIGHUP: PgBouncer rereads its config; new server connections go
		// to the new primary, the open ones stay where they are.
		if _, err := r.signal(nodePooler, syscall.SIGHUP); err != nil {
			return err
		}
	}
	return nil
}

func runPausePooler(ctx context.Context, env nemesis.Env, s nemesis.Step) error {
	r, err := pgRuntime(env)
	if err != nil {
		return err
	}
	logEvent(env, evPausePooler, nodePooler, string(RolePooler), history.Event{}, "SIGSTOP PgBouncer for %v (TTL %v)",
		s.Duration.Round(time.Millisecond), env.TTL())
	if err := r.Pause(nodePooler); err != nil {
		return err
	}
	sleepErr := nemesis.Sleep(ctx, s.Duration)
	if err := r.Resume(nodePooler); err != nil {
		return err
	}
	logEvent(env, evResumePooler, nodePooler, string(RolePooler), history.Event{}, "SIGCONT PgBouncer")
	return sleepErr
}

// runRestartPooler freezes PgBouncer first, so that no statement passes
// while pg_locks is read, then kills it: every session it held ends, and
// each lock pg_locks showed is logged as ended with it.
func runRestartPooler(ctx context.Context, env nemesis.Env, _ nemesis.Step) error {
	r, err := pgRuntime(env)
	if err != nil {
		return err
	}
	if _, err := awaitHolder(ctx, env); err != nil {
		return err
	}
	if err := r.Pause(nodePooler); err != nil {
		return err
	}
	hs, err := r.holders(ctx)
	if err != nil {
		_ = r.Resume(nodePooler)
		return err
	}
	logEvent(env, evRestartPooler, nodePooler, string(RolePooler), history.Event{}, "SIGKILL PgBouncer: %d sessions hold advisory locks", len(hs))
	names := keyNames(env)
	for _, h := range hs {
		if k, ok := names[h.key]; ok && h.client >= 0 {
			logEvent(env, evSessionEnded, nodePooler, string(RolePooler), history.Event{Key: k, Client: h.Client()},
				"client %d's session (backend %d) ends with the pooler's connection, and its lock on %s", h.client, h.pid, k)
		}
	}
	if err := r.Kill(nodePooler); err != nil {
		return err
	}
	if err := r.Restart(ctx, nodePooler, cluster.AsReplica); err != nil {
		return err
	}
	logEvent(env, evPoolerBack, nodePooler, string(RolePooler), history.Event{}, "PgBouncer is back")
	return nil
}

// Client is the holder's client slot.
func (h lockHolder) Client() int { return h.client }
