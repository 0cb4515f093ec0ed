// Package postgres is the PostgreSQL deployment, the lock most applications
// already have: PostgreSQL 15 as a primary with one streaming replica (Debian's
// packages, processes on loopback run as the postgres user), and PgBouncer in
// front of it in session or transaction pooling mode (--pooler). The lock is
// an advisory lock (recipes pg-advisory and pg-advisory-xact, lock/pgadvisory.go).
//
// The whole deployment lives in this folder: the deployment value and its
// flag (this file), its runtime (runtime.go), the faults only it has
// (faults.go) and its scenarios (scenarios.go), each registered from init
// with the catalog it joins. A program links it in with a blank import.
package postgres

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/knob"
)

// Topology is --topology's name for the deployment.
const Topology = "postgres"

// Pooler modes (--pooler): none puts the clients on the servers directly
// (a multi-host connection string that finds the primary), session and
// transaction are PgBouncer's pool_mode.
const (
	PoolerNone        = "none"
	PoolerSession     = "session"
	PoolerTransaction = "transaction"
)

// Poolers lists --pooler's values. PgBouncer's third mode, statement,
// refuses multi-statement transactions, so pg-advisory-xact could not run
// at all: it is refused with the two that can.
var Poolers = []string{PoolerNone, PoolerSession, PoolerTransaction}

// RolePooler is PgBouncer's node kind.
const RolePooler cluster.Role = "pooler"

// Node names.
const (
	nodePrimary = "pg-0"
	nodeReplica = "pg-1"
	nodePooler  = "pgbouncer"
)

// minMajor is the oldest PostgreSQL the deployment runs: 15, Debian 12's.
const minMajor = 15

// ErrClock is why a server's clock is not moved here: advisory locks have
// no expiry, so no clock of the server's decides when one ends.
var ErrClock = errors.New("a PostgreSQL server's clock is not moved: advisory locks have no expiry, so no server clock decides when one ends (a session lock ends with its session)")

func init() { cluster.Register(6, deployment{}) }

type deployment struct{}

var (
	_ cluster.Deployment = deployment{}
	_ cluster.FlagOwner  = deployment{}
)

func pooler(c cluster.Config) string {
	if p := c.Opt("pooler"); p != "" {
		return p
	}
	return PoolerNone
}

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "PostgreSQL 15, a primary and one streaming replica, behind PgBouncer with --pooler session|transaction; the lock is an advisory lock"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "PostgreSQL, a primary and a replica: LOCKJEPSEN_PG_DSN, PgBouncer's with --pooler, and a case with the holder's backend terminated"
}
func (deployment) Flags(fs *flag.FlagSet, c *cluster.Config) {
	fs.Func("pooler", "what stands between the clients and PostgreSQL: none (a multi-host connection string), "+
		"or PgBouncer's pool_mode session or transaction", func(s string) error {
		if err := knob.OneOf("pooler", s, Poolers); err != nil {
			return err
		}
		c.SetOpt("pooler", s)
		return nil
	})
}
func (deployment) Banner(c cluster.Config, version string) string {
	via := "clients connect directly (a multi-host connection string, target_session_attrs=read-write)"
	if p := pooler(c); p != PoolerNone {
		via = "clients connect through PgBouncer, pool_mode " + p
	}
	return fmt.Sprintf("cluster: PostgreSQL, a primary and one streaming replica (asynchronous); %s (%s)", via, version)
}
func (deployment) Note(c cluster.Config, _ bool) string {
	if pooler(c) == PoolerTransaction {
		return "PgBouncer pools in transaction mode: a session advisory lock stays on the server connection its " +
			"statement ran on, which the pooler hands to the next client's transaction; that client's " +
			"pg_try_advisory_lock on the same key then succeeds (the session holds it), and its unlock may free " +
			"another client's lock."
	}
	return ""
}
func (deployment) Settled() string {
	return "waiting for the primary to answer, the replica to stream from it and the pooler to answer"
}
func (deployment) Replicated() bool { return false }
func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	if r, ok := rt.(*Runtime); ok {
		return endpoint.Set{Protocol: endpoint.Postgres, DSN: r.DSN()}
	}
	return endpoint.Set{}
}
func (deployment) Expires() bool               { return false }
func (deployment) Protocol() endpoint.Protocol { return endpoint.Postgres }
func (deployment) Offers(need string) bool {
	return need == Topology || need == cluster.NeedAny
}
func (deployment) ClockError() error { return ErrClock }
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	switch {
	case k.Wait:
		return fmt.Errorf("--wait is a Valkey command: drop it with --topology postgres (replication to the replica is asynchronous)")
	case k.WaitAOF:
		return fmt.Errorf("--waitaof is a Valkey command: drop it with --topology postgres")
	case k.DelayedRestart > 0:
		return fmt.Errorf("--delayed-restart is Redlock's: drop it with --topology postgres")
	}
	return nil
}
func (deployment) Defaults(*cluster.Config, func(string) bool) {}

// Comparisons are the rows the deployment adds to the comparison of lock
// services: the session lock behind each PgBouncer mode, fenced by the
// sequence.
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{
		{Name: "pg-session", Recipe: "pg-advisory", Fence: "read-write", Opts: map[string]string{"pooler": PoolerSession},
			Note: "PostgreSQL's session advisory lock behind PgBouncer in session mode, fenced by a sequence (--topology postgres --pooler session --recipe pg-advisory)"},
		{Name: "pg-transaction", Recipe: "pg-advisory", Fence: "read-write", Opts: map[string]string{"pooler": PoolerTransaction},
			Note: "the same lock behind PgBouncer in transaction mode (--topology postgres --pooler transaction --recipe pg-advisory)"},
	}
}
func (deployment) Validate(c *cluster.Config) error {
	p := pooler(*c)
	if err := knob.OneOf("pooler", p, Poolers); err != nil {
		return err
	}
	if c.FakeTime {
		return ErrClock
	}
	if _, _, err := FindPostgres(); err != nil {
		return err
	}
	if p != PoolerNone {
		if _, err := FindPgBouncer(); err != nil {
			return err
		}
	}
	return nil
}
func (deployment) Layout(c cluster.Config) []cluster.Node {
	nodes := []cluster.Node{{Name: nodePrimary, Kind: cluster.RolePrimary}, {Name: nodeReplica, Kind: cluster.RoleReplica}}
	if pooler(c) != PoolerNone {
		nodes = append(nodes, cluster.Node{Name: nodePooler, Kind: RolePooler})
	}
	return nodes
}
func (deployment) NewLocal(c cluster.Config, _ cluster.Binaries) (cluster.Runtime, error) {
	return newRuntime(c)
}

var majorRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// FindPostgres finds PostgreSQL's server binaries: $LOCKJEPSEN_PG_BIN, else
// the newest /usr/lib/postgresql/*/bin (Debian's layout); the version must
// be 15 or newer.
func FindPostgres() (dir string, major int, err error) {
	dir = os.Getenv("LOCKJEPSEN_PG_BIN")
	if dir == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
		if len(found) == 0 {
			return "", 0, fmt.Errorf("--topology postgres needs PostgreSQL's server, which is not installed: run 'make setup' (installs Debian's postgresql) or set LOCKJEPSEN_PG_BIN to the folder holding postgres, initdb and pg_basebackup")
		}
		dir = filepath.Dir(found[len(found)-1])
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return "", 0, fmt.Errorf("%s/postgres --version: %w (LOCKJEPSEN_PG_BIN=%q)", dir, err, os.Getenv("LOCKJEPSEN_PG_BIN"))
	}
	m := majorRE.FindSubmatch(out)
	if m == nil {
		return "", 0, fmt.Errorf("%s/postgres --version: no version in %q", dir, out)
	}
	major, _ = strconv.Atoi(string(m[1]))
	if major < minMajor {
		return "", 0, fmt.Errorf("%s/postgres is PostgreSQL %d: --topology postgres needs %d or newer (pg_stat_replication and promotion as it runs them); install Debian 12's postgresql or set LOCKJEPSEN_PG_BIN", dir, major, minMajor)
	}
	return dir, major, nil
}

// FindPgBouncer finds PgBouncer: $LOCKJEPSEN_PGBOUNCER_BIN, else on PATH.
func FindPgBouncer() (string, error) {
	if b := os.Getenv("LOCKJEPSEN_PGBOUNCER_BIN"); b != "" {
		if st, err := os.Stat(b); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("LOCKJEPSEN_PGBOUNCER_BIN=%q is not an executable file: point it at pgbouncer, or unset it to use the one on PATH ('make setup' installs Debian's)", b)
		}
		return b, nil
	}
	b, err := exec.LookPath("pgbouncer")
	if err != nil {
		return "", fmt.Errorf("--pooler session|transaction needs PgBouncer, which is not on PATH: run 'make setup' (installs Debian's pgbouncer), set LOCKJEPSEN_PGBOUNCER_BIN, or use --pooler none")
	}
	return b, nil
}

// ctxTODO is for the few calls with no caller's context (a deferred stop).
var ctxTODO = context.Background
