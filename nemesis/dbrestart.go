package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// DBRestarter is an Env that can crash and restart the resource's database
// (the runner: the resource service, which owns its SQLite file).
type DBRestarter interface {
	// RestartDB SIGKILLs the database's owner, waits down, starts it again
	// where it was, and returns once it serves; what says what was restarted.
	RestartDB(ctx context.Context, down time.Duration) (what string, err error)
}

var faultRestartDB = &Fault{
	Name: "restart-db",
	Kind: "failover", On: []string{"sql-lease"},
	Marks: []Mark{{Event: "restart-db", Heal: "db-restarted", Cause: CauseDBRestart}},
	Doc: "SIGKILL the resource service and the SQLite database it owns (WAL kept), keep it down for 1-2s, restart " +
		"it on the same address: the sql-lease recipe's lock is unavailable meanwhile, and grants nothing twice",
	PlanStep: func(rng *rand.Rand, p PlanParams) Step {
		return Step{Duration: time.Second + time.Duration(rng.Int64N(int64(time.Second)))}
	},
	Span:   func(s Step, _ PlanParams) time.Duration { return s.Duration + 3*time.Second },
	Inject: runRestartDB,
}

func runRestartDB(ctx context.Context, env Env, s Step) error {
	r, ok := env.(DBRestarter)
	if !ok {
		return fmt.Errorf("this run cannot restart its database")
	}
	Logf(env, "restart-db", "resource", "database", "SIGKILL the resource service and its database, down for %v", s.Duration.Round(time.Millisecond))
	what, err := r.RestartDB(ctx, s.Duration)
	if err != nil {
		return err
	}
	Logf(env, "db-restarted", "resource", "database", "%s is back", what)
	return nil
}
