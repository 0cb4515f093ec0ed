package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/resource"
)

// sqlLease is the database's own lease lock, the decision table's last row ("the
// resource cannot check a fence → ... the database's own locking"): the lock
// is a row in the same SQL database as the data,
//
//	UPDATE locks SET holder = $tok, expires_at = now + ttl, fence = fence + 1
//	WHERE lock_key = $k AND (holder IS NULL OR expires_at < now) RETURNING fence
//
// with extend and release by compare-and-set on the holder. It goes through
// the resource service's HTTP protocol (POST /v1/lease/*) rather than opening
// the database itself: the service stays the one owner of the database (with
// SQLite, one process writing one file, no cross-process locking to trust),
// and PostgreSQL and SQLite look the same to the client. Time is the
// database's (PostgreSQL's clock_timestamp(); with SQLite, the service's
// clock); the fence is the row's counter, issued in the granting UPDATE.
type sqlLease struct {
	cfg Config
	c   *resource.Client
}

// validateSQLLease checks the sql-lease recipe's config: a resource to hold
// its row, and no Valkey knob.
func validateSQLLease(c *Config) error {
	switch {
	case c.Resource == "":
		return fmt.Errorf("recipe %s: no resource address: the lock is a row of the resource's database", c.Recipe)
	case c.Wait.On() || c.WaitAOF.On():
		return fmt.Errorf("recipe %s cannot WAIT or WAITAOF: it does not use Valkey (one database, no replicas to wait for)", c.Recipe)
	}
	return nil
}

func openSQLLease(cfg Config) (Lock, error) {
	return &sqlLease{cfg: cfg, c: resource.NewClient(cfg.Resource)}, nil
}

func (l *sqlLease) Recipe() string                      { return SQLLease }
func (l *sqlLease) SelfRenewing() bool                  { return false }
func (l *sqlLease) Lost(string, string) <-chan struct{} { return nil }
func (l *sqlLease) SafeRelease() bool                   { return true }
func (l *sqlLease) Observe(Observer)                    {}
func (l *sqlLease) Close()                              { l.c.Close() }

// leaseResult maps the service's answer: a refusal is a definite fail (the
// UPDATE matched no row), a lost reply or a database error is unknown.
func leaseResult(what string, rep resource.LeaseReply, err error, refused string) Result {
	switch {
	case err == nil && rep.OK:
		return ok()
	case err == nil:
		return fail(fmt.Errorf("%s matched no row: %s (%w)", what, refused, ErrNotHeld))
	case resource.Unknown(err):
		return Result{history.Info, fmt.Errorf("%s: %w", what, err)}
	}
	return fail(fmt.Errorf("%s: %w", what, err))
}

func (l *sqlLease) Acquire(ctx context.Context, key, token string, ttl time.Duration) (int64, Result) {
	if ttl < time.Millisecond {
		return 0, fail(fmt.Errorf("ttl %v below 1ms: %w", ttl, ErrRefused))
	}
	rep, err := l.c.Lease(ctx, resource.LeaseAcquire, resource.LeaseRequest{Key: key, Token: token, TTLMs: ttl.Milliseconds()})
	r := leaseResult("UPDATE locks (acquire)", rep, err, "another client holds the lock")
	if !r.Ok() || !l.cfg.Fencing {
		return 0, r
	}
	if rep.Fence <= 0 {
		return 0, Result{history.Info, errors.New("UPDATE locks (acquire): granted without a fence number")}
	}
	return rep.Fence, r
}

func (l *sqlLease) Extend(ctx context.Context, key, token string, ttl time.Duration) Result {
	rep, err := l.c.Lease(ctx, resource.LeaseExtend, resource.LeaseRequest{Key: key, Token: token, TTLMs: ttl.Milliseconds()})
	return leaseResult("UPDATE locks (extend)", rep, err, "the lease expired or another client holds it")
}

func (l *sqlLease) Release(ctx context.Context, key, token string) Result {
	rep, err := l.c.Lease(ctx, resource.LeaseRelease, resource.LeaseRequest{Key: key, Token: token})
	return leaseResult("UPDATE locks (release)", rep, err, "the lease expired or another client holds it")
}
