package resource

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A failover that loses an INCR hands one fence number to two holders. In
// every mode but none exactly one of them may get through, and no update may be
// lost; the other is told its number was already used by another holder.

type step struct {
	who byte // 'A' or 'B'
	op  string
}

func steps(s string) []step {
	var out []step
	for _, f := range strings.Fields(s) {
		op := OpRead
		if f[1] == 'W' {
			op = OpWrite
		}
		out = append(out, step{f[0], op})
	}
	return out
}

func TestSameFenceTwoHolders(t *testing.T) {
	orders := []string{
		"AR BR AW BW", // both read, then both write
		"AR BR BW AW",
		"AR AW BR BW", // one section after the other
		"BR AR AW BW",
	}
	for _, b := range allBackends {
		for _, mode := range Modes {
			for _, order := range orders {
				t.Run(fmt.Sprintf("%s/%s/%s", b.name, mode, strings.ReplaceAll(order, " ", "-")), func(t *testing.T) {
					_, c := startService(t, b.fresh(t, mode), "job-1")
					ctx := ctxT(t)
					holders := map[byte]Holder{
						'A': {RunID: "job-1", Client: 0, Process: 0, Token: "aaaa1111aaaa", Fence: 7},
						'B': {RunID: "job-1", Client: 1, Process: 1, Token: "bbbb2222bbbb", Fence: 7},
					}
					read := map[byte]*Reply{}
					var accepted []byte
					var turnedAway []string
					for _, s := range steps(order) {
						h := holders[s.who]
						if s.op == OpRead {
							r, err := c.Read(ctx, h)
							if err != nil {
								t.Fatal(err)
							}
							if r.Accepted() {
								read[s.who] = &r
							} else {
								turnedAway = append(turnedAway, r.Reason)
							}
							continue
						}
						if read[s.who] == nil {
							continue // a holder whose read was refused stops there
						}
						r, err := c.Write(ctx, h, read[s.who].Value+1)
						if err != nil {
							t.Fatal(err)
						}
						if r.Accepted() {
							accepted = append(accepted, s.who)
						} else {
							turnedAway = append(turnedAway, r.Reason)
						}
					}
					row := mustRow(t)(c.Row(ctx, "job-1"))
					if mode == ModeNone {
						if len(accepted) != 2 {
							t.Fatalf("mode none: %d writes accepted, want both", len(accepted))
						}
						return
					}
					if len(accepted) != 1 {
						t.Fatalf("writes accepted from %q; want exactly one holder", accepted)
					}
					if row.Value != 1 {
						t.Fatalf("one write accepted but value is %d: an update was lost", row.Value)
					}
					if len(turnedAway) != 1 || !strings.Contains(turnedAway[0], "fence 7 was already used by another holder (token ") {
						t.Fatalf("replies to the other holder: %q; want it told the number was used by another holder", turnedAway)
					}
					t.Logf("%c through; other told: %s", accepted[0], turnedAway[0])
				})
			}
		}
	}
}

// TestSameFenceRace: the same, with the two holders racing for real, round
// after round; each round both present the round's number.
func TestSameFenceRace(t *testing.T) {
	const rounds = 40
	for _, b := range allBackends {
		for _, mode := range []Mode{ModeWrite, ModeReadWrite} {
			t.Run(fmt.Sprintf("%s/%s", b.name, mode), func(t *testing.T) {
				_, c := startService(t, b.fresh(t, mode), "job-1")
				ctx := ctxT(t)
				for round := int64(1); round <= rounds; round++ {
					var (
						wg   sync.WaitGroup
						mu   sync.Mutex
						won  int
						errs []error
					)
					for who := range 2 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							h := Holder{RunID: "job-1", Client: who, Process: who, Token: fmt.Sprintf("r%d-h%d", round, who), Fence: round}
							r, err := c.Read(ctx, h)
							if err == nil && r.Accepted() {
								r, err = c.Write(ctx, h, r.Value+1)
							}
							mu.Lock()
							defer mu.Unlock()
							if err != nil {
								errs = append(errs, err)
							} else if r.Accepted() {
								won++
							}
						}()
					}
					wg.Wait()
					if len(errs) > 0 {
						t.Fatal(errs)
					}
					if won != 1 {
						t.Fatalf("round %d: %d holders wrote with fence %d; want exactly one", round, won, round)
					}
				}
				if row := mustRow(t)(c.Row(ctx, "job-1")); row.Value != rounds || row.LastFence != rounds {
					t.Fatalf("after %d rounds: value %d last_fence %d; want %d and %d (no lost update)", rounds, row.Value, row.LastFence, rounds, rounds)
				}
			})
		}
	}
}
