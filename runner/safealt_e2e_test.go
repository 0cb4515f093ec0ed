package runner

import (
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/knob"
)

// The failover race with numbers from the database's own sequence: the lock
// still grants twice, but now the stale holder is the one turned away, and
// the counter never goes backwards.
func TestFailoverRaceFenceFromResource(t *testing.T) {
	testslot.Parallel(t)
	cfg := config(t, "failover-race", func(c *Config) { c.FenceSource = knob.FenceSourceResource })
	o, r := runAndLoad(t, cfg)
	if !Reproduced(cfg, r) {
		t.Fatalf("the run did not show the lesson of --fence-source resource: %q\n%s", Unmet(cfg, r), o.Summary)
	}
	if r.Lock.Valid != checker.Invalid || r.Resource.Valid != checker.Valid {
		t.Fatalf("lock %v, resource %v; want the lock invalid and the resource valid\n%s", r.Lock.Valid, r.Resource.Valid, o.Summary)
	}
	if r.FenceTokens.Regressions != 0 || r.FenceTokens.Duplicates != 0 || r.StaleWrites.NewerTurnedAway != 0 {
		t.Fatalf("fence regressions %d, duplicates %d, newer turned away %d: a database sequence must not go backwards\n%s",
			r.FenceTokens.Regressions, r.FenceTokens.Duplicates, r.StaleWrites.NewerTurnedAway, o.Summary)
	}
	if r.StaleWrites.Rejected == 0 {
		t.Fatalf("stale writes %+v: want some rejected\n%s", r.StaleWrites, o.Summary)
	}
	if !strings.Contains(o.Summary, "turned the STALE holder away") || !strings.Contains(o.Summary, "stale-holder-turned-away") {
		t.Fatalf("the summary does not say which holder was protected:\n%s", o.Summary)
	}
	// Every number came from the resource, as its own operation, and was logged.
	ev, err := history.ReadFile(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	issued := 0
	for _, e := range ev {
		switch {
		case e.F == history.FAcquire && e.Type == history.OK && e.Fence != 0:
			t.Fatalf("acquire ok carries fence %d: with --fence-source resource the lock draws no number", e.Fence)
		case e.F == history.FFence && e.Type == history.OK:
			if e.FenceSource != history.FenceResource || e.Fence <= 0 {
				t.Fatalf("fence ok without a number from the resource: %+v", e)
			}
			issued++
		}
	}
	if issued < 3 {
		t.Fatalf("only %d fence numbers issued", issued)
	}
	b, _ := os.ReadFile(filepath.Join(cfg.Out, "resource.log"))
	if n := strings.Count(string(b), "issued by the sqlite sequence"); n != issued {
		t.Fatalf("resource.log names %d issued numbers, the history %d", n, issued)
	}
}

// The database's own lease lock under a database restart: unavailable while
// the database is down, never granted twice.
func TestSQLLeaseSurvivesDatabaseRestart(t *testing.T) {
	testslot.Parallel(t)
	cfg := config(t, "sql-lease-restart", nil)
	if cfg.Recipe != "sql-lease" {
		t.Fatalf("scenario recipe %q, want sql-lease", cfg.Recipe)
	}
	o, r := runAndLoad(t, cfg)
	if !Reproduced(cfg, r) || o.ExitCode != 0 {
		t.Fatalf("exit %d; the run did not show the lesson of sql-lease-restart: %q\n%s", o.ExitCode, Unmet(cfg, r), o.Summary)
	}
	if r.Lock.Valid != checker.Valid || r.DoubleHolders != 0 {
		t.Fatalf("lock %v with %d double holders: the database's lease granted twice\n%s", r.Lock.Valid, r.DoubleHolders, o.Summary)
	}
	nem, err := history.ReadFile(filepath.Join(cfg.Out, "nemesis.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	restarts := 0
	for _, e := range nem {
		if e.F == "db-restarted" {
			restarts++
		}
	}
	if restarts < 2 {
		t.Fatalf("%d database restarts, want 2 or more", restarts)
	}
	if a := r.Ops["acquire"]; a == nil || a.OK < 20 || a.Info == 0 {
		t.Fatalf("acquires %+v: want grants before and after, and unanswered ones while down", a)
	}
	// Grants carry the lock row's counter, which kept rising across restarts.
	ev, err := history.ReadFile(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ev {
		if e.F == history.FAcquire && e.Type == history.OK && (e.Fence == 0 || e.FenceSource != history.FenceLeaseRow) {
			t.Fatalf("grant without the lease row's number: %+v", e)
		}
	}
	if r.FenceTokens.Regressions != 0 || r.FenceTokens.Duplicates != 0 {
		t.Fatalf("the lease row's counter went backwards: %+v", r.FenceTokens)
	}
}
