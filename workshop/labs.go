package workshop

import (
	"fmt"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Labs is the workshop, in teaching order. The run presets are shortened
// (--time-limit 12-15s) where the lesson still shows on a loaded machine, so that all labs back to
// back leave most of the 90 minutes for discussion; the tests run exactly
// these commands and assert exactly these claims.
func Labs() []Lab {
	// Porcupine's pages of the first lock key and of the row it protects.
	keys, rows := runner.Keys(1)
	lockPage := runfolder.PorcupinePage(runfolder.PageLock, keys[0])
	rowPage := runfolder.PorcupinePage(runfolder.PageResource, rows[0])
	labs := []Lab{
		labByHand(),
		labFailoverRace(lockPage),
		labWait(),
		labMinReplicas(),
		labPausedClient(rowPage),
		labFencing(),
		labClocks(),
		labClosing(lockPage),
	}
	for i := range labs {
		for j := range labs[i].Steps {
			labs[i].Steps[j].Lab = labs[i].N
		}
	}
	return labs
}

// labByHand is lab 1, the lock by hand.
func labByHand() Lab {
	return Lab{
		N: 1, Title: "The lock by hand", Minutes: 10,
		Question: "You take a lock with SET ... NX PX 30000, then extend it with SET ... IFEQ but forget PX. " +
			"What does PTTL say afterwards: about 30000, what was left of the old lease, or something else? " +
			"And what does a release with a stale token (DELIFEQ with someone else's token) return?",
		Steps: []Step{{
			Name: "lab1", Kind: KindScript, Script: "lock-by-hand",
			Claims: []Claim{
				replyIs("acquire-a", "OK", "the first SET NX PX answers OK: the lock is yours"),
				replyIs("acquire-b", "(nil)", "a second client's SET NX PX answers (nil): refused, the key exists"),
				replyIs("pttl-no-px", "(integer) -1", "an extend without PX answers OK and leaves PTTL -1: the lock never expires"),
				replyIs("stale-release", "(integer) 0", "DELIFEQ with a stale token returns 0 and deletes nothing"),
				replyIs("late-extend", "(nil)", "an extend after the release answers (nil): it cannot bring the lock back"),
				replyIs("fenced-refused", "1) (nil)", "a refused fenced acquire still increments the fence counter (EXEC: (nil), then the number)"),
			},
			Open: []string{TranscriptFile},
		}},
	}
}

// labFailoverRace is lab 2, the failover race.
func labFailoverRace(lockPage string) Lab {
	return Lab{
		N: 2, Title: "The failover race", Minutes: 15,
		Question: "8 clients share one lock on a Sentinel-managed primary with 2 replicas. The nemesis pauses the " +
			"replicas, cuts their links, waits until a client takes the lock on the primary alone, and SIGKILLs " +
			"the primary. Will two clients hold the lock at once? The resource checks a fencing token on reads " +
			"and writes: will the data be corrupted? If the fence turns one holder away, which one: the older or the newer? " +
			"Then the same race with numbers the database issues from its own sequence after each grant " +
			"(--fence-source resource): which holder is turned away now?",
		Steps: []Step{
			{
				Name: "lab2", Kind: KindRun,
				// The scenario's own 25 s, two failovers or three: with
				// 15 s there was one, and on a loaded CI machine one
				// Sentinel failover took 6.4 s, longer than the TTL,
				// so the stranded lease ran out first and the run
				// checked valid. With 25 s under two busy loops: 10 of
				// 10 seeds invalid, the newer holder turned away in each.
				Args: []string{"--scenario", "failover-race"},
				Claims: []Claim{
					lockIs(checker.Invalid, "the lock check is invalid: the lock was granted twice"),
					doubleGrantBy("failover", "a double grant is blamed on the failover"),
					resourceIs(checker.Valid, "the resource check is valid: the fence let only one holder write"),
					newerTurnedAway("the fence turned the NEWER holder away: the failover set the fence counter back"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, lockPage, runfolder.Summary, runfolder.Results},
			},
			{
				Name: "lab2-db-fence", Kind: KindRun,
				Args: []string{"--scenario", "failover-race", "--fence-source", "resource"},
				Claims: []Claim{
					lockIs(checker.Invalid, "the lock check is still invalid: where the number comes from does not change the lock"),
					claim(scenario.StaleHolderTurnedAway(), "the fence turned the STALE holder away: the database's sequence does not go backwards"),
					claim(scenario.NoFenceRegression(), "no fence number was handed out twice or set back"),
					resourceIs(checker.Valid, "the resource check is valid"),
				},
				Open: []string{runfolder.Index, runfolder.Summary, runfolder.ResourceLog},
			},
			{
				// The picture to end on: the participant's own race, cut
				// down to what its first double grant needs (a tenth of
				// a second of shrinking, a second of checking).
				Name: "lab2-shrunk", Kind: KindShrink, From: "lab2",
				Claims: []Claim{
					doubleGrantBy("failover", "your run's first double grant, shrunk, is still a double grant blamed on the failover"),
					eventsAtMost(12, "12 events or fewer are left of your run's thousands: the grants and the fault that left the first unreplicated"),
				},
				Open: []string{runfolder.TimelinePNG, runfolder.Index, runfolder.Shrink},
			},
		},
	}
}

// labWait is lab 3, wAIT detects but does not undo.
func labWait() Lab {
	return Lab{
		N: 3, Title: "WAIT detects but does not undo", Minutes: 12,
		Question: "Same race, but every acquire is followed by WAIT 1 100, and an acquire no replica acknowledged " +
			"is released and reported as failed. Does the double grant go away? What does WAIT cost? And when the " +
			"primary is instead restarted faster than Sentinel notices, without persistence, does WAIT still help? " +
			"What does appendfsync always change?",
		Steps: []Step{
			{
				Name: "lab3-wait", Kind: KindRun,
				Args: []string{"--scenario", "failover-race", "--time-limit", "15s", "--wait", "1:100ms"},
				Claims: []Claim{
					waitShort("WAIT 1 100 returned 0 for acquires made while the replicas were cut off: those were released"),
					lockIs(checker.Valid, "the lock check is valid: the grant the race needs was refused"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, runfolder.Summary, runfolder.History},
			},
			{
				Name: "lab3-restart", Kind: KindRun,
				// A 9 s TTL renews every 3 s. The fault strikes just after a
				// renewal, and the lock comes back once a replica has
				// resynced (WAIT needs one): 0.75 or 1.7 s later here. With
				// the scenario's 3 s TTL the holder's next renewal, 1 s on,
				// often came first, was told "not held", and it stopped: on
				// a loaded machine (CI, two busy loops) 1 run in 4 checked
				// valid.
				Args: []string{"--scenario", "fast-restart", "--time-limit", "12s", "--ttl", "9s", "--wait", "1:100ms"},
				Claims: []Claim{
					lockIs(checker.Invalid, "the lock check is invalid although every grant was acknowledged by a replica"),
					lockViolationBy("fast-restart", "the lock violation is blamed on the fast restart: the replicas resynced from an empty primary"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, runfolder.Summary},
			},
			{
				Name: "lab3-fsync-always", Kind: KindRun,
				Args: []string{"--scenario", "fast-restart", "--time-limit", "12s", "--ttl", "9s", "--wait", "1:100ms", "--appendonly", "--appendfsync", "always"},
				Claims: []Claim{
					lockIs(checker.Valid, "with appendonly yes and appendfsync always the restarted primary reloads its locks: the lock check is valid"),
				},
				Open: []string{runfolder.Index, runfolder.Summary},
			},
		},
	}
}

// labMinReplicas is lab 4, min-replicas-to-write.
func labMinReplicas() Lab {
	return Lab{
		N: 4, Title: "min-replicas-to-write", Minutes: 10,
		Question: "Every node runs min-replicas-to-write 1 and min-replicas-max-lag 3. Both replicas freeze. " +
			"For how long does the primary keep acknowledging lock writes that nobody copies: not at all, " +
			"a few milliseconds, or seconds? And does the failover race still hand the lock out twice?",
		Steps: []Step{
			{
				Name: "lab4-window", Kind: KindScript, Script: "min-replicas-window",
				Claims: []Claim{
					figureAbove("window_s", 1, "the primary kept answering OK for more than a second after both replicas froze"),
					replyPrefix("first-refusal", "(error) NOREPLICAS", "then it refused with NOREPLICAS: the lag is measured in seconds"),
				},
				Open: []string{TranscriptFile},
			},
			{
				Name: "lab4-min-replicas", Kind: KindRun,
				// down-after 2 s: at 1 s Sentinel sometimes fails over a
				// second time on its own a second after the first (see
				// deployments/sentinel/watcher.go), and that second
				// failover's split brain grants twice whatever
				// min-replicas does; the question here is the first one.
				Args: []string{"--scenario", "failover-race", "--time-limit", "15s", "--min-replicas", "1:10", "--down-after", "2s"},
				Claims: []Claim{
					noReplicas("acquires were refused with NOREPLICAS once the replicas' links were dropped"),
					lockIs(checker.Valid, "the lock check is valid: the cut-off primary granted nothing"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, runfolder.Summary},
			},
		},
	}
}

// labPausedClient is lab 5, the paused client.
func labPausedClient(rowPage string) Lab {
	return Lab{
		N: 5, Title: "The paused client", Minutes: 10,
		Question: "A client holding the lock freezes (a GC pause; here SIGSTOP) for longer than its TTL, then wakes " +
			"up and finishes its critical section. Will the lock checker flag it? Will the data be corrupted? " +
			"And with the fence?",
		Steps: []Step{
			{
				Name: "lab5-no-fence", Kind: KindRun,
				Args:    pausedClient("none"),
				Retries: 1,
				Claims: []Claim{
					lockIs(checker.Valid, "the lock check is valid: the lease expired honestly"),
					resourceIs(checker.Invalid, "the resource check is invalid: the woken client's write was a lost update"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, rowPage, runfolder.Summary},
			},
			{
				Name: "lab5-fence", Kind: KindRun,
				Args: pausedClient("read-write"),
				Claims: []Claim{
					lockIs(checker.Valid, "the lock check is still valid"),
					noStaleAccepted("no stale write landed: the fence turned away every write sent after the lease ended"),
					resourceIs(checker.Valid, "the resource check is valid"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, runfolder.Resource},
			},
		},
	}
}

// labFencing is lab 6, fencing writes only versus reads too.
func labFencing() Lab {
	return Lab{
		N: 6, Title: "Fencing writes only versus reads too", Minutes: 8,
		Question: "The fence is checked on writes only, as in the Valkey 9 lock article's UPDATE ... WHERE last_fence < $f. A paused " +
			"client read the value, froze, and wakes up while the new holder, which read the same value, is still " +
			"thinking. Is the stale write rejected or accepted? What changes when reads present the fence too?",
		Steps: []Step{
			{
				Name: "lab6-write", Kind: KindRun,
				Args:    pausedClient("write"),
				Retries: 1,
				Claims: []Claim{
					staleAccepted("the stale write was accepted: its fence was still the highest written"),
					resourceIs(checker.Invalid, "the resource check is invalid: both wrote value+1, a lost update"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, runfolder.Resource},
			},
		},
	}
}

// labClocks is lab 7, clocks.
func labClocks() Lab {
	return Lab{
		N: 7, Title: "Clocks", Minutes: 8,
		Question: "Valkey expires keys by its wall clock. What happens to a lease when the primary's clock jumps " +
			"forward by more than the TTL? And when it jumps while nobody holds the lock, what does a VALID verdict prove? And when a holder's own clock runs slow, who notices: the lock or the data? " +
			"Last, Redlock: five independent primaries, a majority needed. Can one node's clock jump hand the lock out twice?",
		Steps: []Step{
			{
				Name: "lab7-server-clock", Kind: KindRun,
				Args: []string{"--scenario", "clock-jump", "--time-limit", "12s"},
				Claims: []Claim{
					lockIs(checker.Invalid, "the lock check is invalid"),
					doubleGrantBy("server-clock", "the double grant is blamed on the server's clock: the lease ended early"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG, runfolder.Logs + "/"},
			},
			{
				// The same jump on a workload that holds its lock a few
				// ms in every second (one client, one short step, idle
				// between): the jump finds no lease alive, and VALID
				// proves nothing. Idle 50 ms (the scenario's own) was
				// not rare enough: a CI run on a loaded machine held
				// the lock long enough, twice, for the jump to find it.
				Name: "lab7-not-exercised", Kind: KindRun,
				Args:    []string{"--scenario", "clock-jump", "--clients", "1", "--steps", "1", "--think", "0s", "--idle", "1s", "--time-limit", "12s"},
				Retries: 1,
				Claims: []Claim{
					claim(scenario.ValidIs(checker.Valid), "the run is VALID: nobody was granted the lock twice"),
					claim(scenario.NotExercised("clock-bump"), "and says so itself: the clock jumped while no lease was alive, \"VALID ..., but not exercised: clock-bump\""),
				},
				Open: []string{runfolder.Summary, runfolder.Results},
			},
			{
				Name: "lab7-client-clock", Kind: KindRun,
				Args: []string{"--scenario", "client-clock-skew", "--fence", "none", "--time-limit", "12s"},
				Claims: []Claim{
					lockIs(checker.Valid, "the lock check is valid: the server expired the lease on time"),
					resourceIs(checker.Invalid, "the resource check is invalid: the slow client kept writing after its lease ended"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG},
			},
			{
				Name: "lab7-redlock", Kind: KindRun,
				Args: []string{"--scenario", "redlock-clock-jump"},
				Claims: []Claim{
					lockIs(checker.Invalid, "Redlock on five independent primaries granted the lock twice once one node's clock jumped (Kleppmann's scenario)"),
					lockViolationBy("server-clock", "the violation is blamed on the node's clock"),
				},
				Open: []string{runfolder.Index, runfolder.TimelinePNG},
			},
		},
	}
}

// labClosing is lab 8, closing: which lock for which job.
func labClosing(lockPage string) Lab {
	return Lab{
		N: 8, Title: "Closing: which lock for which job", Minutes: 10,
		Question: "First, the lock most applications already have: a PostgreSQL advisory lock, on the database " +
			"they run anyway, behind the PgBouncer in front of it. With no fault at all, can the pooler hand the " +
			"lock to two clients? And a lock held inside a transaction instead of a session? " +
			"Then three jobs: a cache warmer, an invoice run posting to a database, and a job calling an external " +
			"API that cannot check a fence. Which lock for each, given what this room measured today?",
		Steps: []Step{{
			// The pooler ate my lock: pg-pooler-transaction and its
			// remedy each held on 10 of 10 seeds
			// (scripts/reproduction-rates.sh, 2026-12-04).
			Name: "lab8-pooler", Kind: KindRun,
			Args: []string{"--scenario", "pg-pooler-transaction"},
			Claims: []Claim{
				lockIs(checker.Invalid, "the lock check is invalid with no fault at all: in transaction mode PgBouncer ran another "+
					"client's pg_try_advisory_lock on the server connection whose session held the lock, and it succeeded"),
			},
			Open: []string{runfolder.Index, runfolder.TimelinePNG, lockPage},
		}, {
			Name: "lab8-xact", Kind: KindRun,
			Args: []string{"--scenario", "pg-xact-pooler-transaction"},
			Claims: []Claim{
				claim(scenario.ValidIs(checker.Valid), "the transaction lock behind the same pooler is valid: the open "+
					"transaction pins its server connection, so no other client's statement runs in the session that holds it"),
			},
			Open: []string{runfolder.Index, runfolder.TimelinePNG},
		}, {
			Name: "lab8", Kind: KindReport,
			Claims: []Claim{{
				Text: "the closing table has the room's own numbers from labs 2 to 8",
				Check: func(ev *Evidence) (string, bool) {
					var missing []string
					for _, l := range Labs() {
						for _, s := range l.Steps {
							if s.Kind == KindRun && ev.Others[s.Name] == nil {
								missing = append(missing, s.Name)
							}
						}
					}
					if len(missing) > 0 {
						return "not run yet: " + strings.Join(missing, ", "), false
					}
					return fmt.Sprintf("%d runs found", len(ev.Others)), true
				},
			}},
		}},
	}
}

// The claim helpers: each says what it reads, so that a failing claim tells
// the facilitator what the run showed instead.

// claim gives a scenario predicate the lab's own words: the predicate, the
// same one scenarios expect, does the reading.
func claim(p scenario.Predicate, text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		if ev.Result == nil {
			return errNoEvidence.Error(), false
		}
		return p.Check(ev.Result)
	}}
}

func lockIs(want checker.Validity, text string) Claim { return claim(scenario.LockIs(want), text) }

// eventsAtMost is a shrunk run's size: what is left fits on a slide.
func eventsAtMost(n int, text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		return fmt.Sprintf("%d events", ev.Events), ev.Events > 0 && ev.Events <= n
	}}
}

func resourceIs(want checker.Validity, text string) Claim {
	return claim(scenario.ResourceIs(want), text)
}

func doubleGrantBy(cause, text string) Claim { return claim(scenario.DoubleGrantBy(cause), text) }

func lockViolationBy(cause, text string) Claim { return claim(scenario.LockViolationBy(cause), text) }

func newerTurnedAway(text string) Claim { return claim(scenario.NewerTurnedAway(), text) }

func staleRejected(text string) Claim { return claim(scenario.StaleRejected(), text) }

func noStaleAccepted(text string) Claim { return claim(scenario.NoStaleAccepted(), text) }

func staleAccepted(text string) Claim { return claim(scenario.StaleAccepted(), text) }

func waitShort(text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		if ev.Result == nil {
			return errNoEvidence.Error(), false
		}
		return fmt.Sprintf("%d acquires failed with \"WAIT 1 100: 0 replica(s) acknowledged; lock released\"; acquire p99 %.1f ms",
			ev.WaitShort, ev.Result.LatencyMs.Acquire.P99), ev.WaitShort > 0
	}}
}

func noReplicas(text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		if ev.Result == nil {
			return errNoEvidence.Error(), false
		}
		return fmt.Sprintf("%d acquires failed with NOREPLICAS", ev.NoReplicas), ev.NoReplicas > 0
	}}
}

func replyIs(id, want, text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		if ev.Transcript == nil {
			return errNoEvidence.Error(), false
		}
		got, ok := ev.Transcript.Reply(id)
		if !ok {
			return "no reply recorded for " + id, false
		}
		first, _, _ := strings.Cut(got, "\n")
		return "reply " + first, first == want
	}}
}

func replyPrefix(id, prefix, text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		if ev.Transcript == nil {
			return errNoEvidence.Error(), false
		}
		got, ok := ev.Transcript.Reply(id)
		if !ok {
			return "no reply recorded for " + id, false
		}
		return "reply " + got, strings.HasPrefix(got, prefix)
	}}
}

func figureAbove(name string, min float64, text string) Claim {
	return Claim{Text: text, Check: func(ev *Evidence) (string, bool) {
		if ev.Transcript == nil {
			return errNoEvidence.Error(), false
		}
		v, ok := ev.Transcript.Figures[name]
		return fmt.Sprintf("%s = %.2f", name, v), ok && v > min
	}}
}

// pausedClient is the run shape of labs 5 and 6: one step with a long think,
// so the pause lands inside a section and the woken client writes. Lab 6
// compares write mode with lab 5's fenced run, so only the fence may differ.
func pausedClient(fence string) []string {
	return []string{"--scenario", "paused-client", "--fence", fence, "--steps", "1", "--think", "3s", "--time-limit", "25s", "--interval", "1s"}
}
