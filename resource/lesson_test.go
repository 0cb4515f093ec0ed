package resource

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// TestLessonWriteVsReadWrite is the workshop's lesson with two clients: the old
// holder (fence 1) reads, the new holder (fence 2) reads, the old holder writes,
// the new holder writes. Checking fences on writes only lets both writes land
// on the same read value (a lost update); checking reads too turns the old
// holder away.
func TestLessonWriteVsReadWrite(t *testing.T) {
	old := Holder{RunID: "invoice-run", Client: 0, Process: 0, Token: "9c1e0d7a", Fence: 1}
	nu := Holder{RunID: "invoice-run", Client: 1, Process: 1, Token: "4b7f22c1", Fence: 2}
	tests := []struct {
		mode      Mode
		oldWrite  string // the verdict on the stale holder's write
		reason    string // part of its reason
		lostWrite bool   // two sections committed on one read value
	}{
		{ModeNone, history.Accepted, "", true},
		{ModeWrite, history.Accepted, "", true},
		{ModeReadWrite, history.Rejected, "rejected: fence 1 is older than last_fence 2 — a newer holder has read or written", false},
	}
	for _, b := range allBackends {
		for _, tc := range tests {
			t.Run(string(b.name)+"/"+string(tc.mode), func(t *testing.T) {
				_, c := startService(t, b.fresh(t, tc.mode), "invoice-run")
				ctx := ctxT(t)
				must := func(r Reply, err error) Reply {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				oldRead := must(c.Read(ctx, old))
				newRead := must(c.Read(ctx, nu))
				if !oldRead.Accepted() || !newRead.Accepted() || oldRead.Value != 0 || newRead.Value != 0 {
					t.Fatalf("reads: old %+v, new %+v; want both accepted with value 0", oldRead, newRead)
				}
				oldWrite := must(c.Write(ctx, old, oldRead.Value+1))
				newWrite := must(c.Write(ctx, nu, newRead.Value+1))
				if oldWrite.Verdict != tc.oldWrite || !strings.Contains(oldWrite.Reason, tc.reason) {
					t.Errorf("old holder's write: %+v; want %s (%q)", oldWrite, tc.oldWrite, tc.reason)
				}
				if !newWrite.Accepted() || newWrite.Value != 1 || newWrite.LastFence != 2 {
					t.Errorf("new holder's write: %+v; want accepted, value 1, last_fence 2", newWrite)
				}
				row := mustRow(t)(c.Row(ctx, "invoice-run"))
				writes := 0
				for _, r := range []Reply{oldWrite, newWrite} {
					if r.Accepted() {
						writes++
					}
				}
				// Two sections committed, the value moved by one: an update was lost.
				if lost := int64(writes) > row.Value; lost != tc.lostWrite {
					t.Errorf("%d writes accepted, value %d: lost update %v, want %v", writes, row.Value, lost, tc.lostWrite)
				}
				t.Logf("old write: %s %s", oldWrite.Verdict, oldWrite.Reason)
			})
		}
	}
}

func mustRow(t *testing.T) func(Row, error) Row {
	return func(r Row, err error) Row {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}
