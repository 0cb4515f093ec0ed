package nemesis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// callLog records, in order, the nemesis's events and the clock writes it
// asks of the runtime: what TestClockFaultWindowHoldsTheJump reads.
type callLog struct {
	cluster.Runtime // nil: only the methods below are called
	Env             // nil: likewise
	calls           []string
}

func (c *callLog) Cluster() cluster.Runtime { return c }
func (c *callLog) Log(e history.Event)      { c.calls = append(c.calls, "log "+e.F) }
func (c *callLog) Nodes() []cluster.Node {
	return []cluster.Node{{Name: "valkey-0", Kind: cluster.RolePrimary, PID: 1}}
}
func (c *callLog) Primary(context.Context) (cluster.Node, error) { return c.Nodes()[0], nil }
func (c *callLog) SetClockOffset(name, offset string) error {
	c.calls = append(c.calls, fmt.Sprintf("clock %s %q", name, offset))
	return nil
}

// A clock fault's window must hold every moment the node's clock may be off:
// its start logged before the write (SetClockOffset returns only once the
// node shows the jump, and grants the jump allows can come back meanwhile),
// its heal logged after the reset shows. Logged the other way round, a
// double grant 2 ms before the start event was blamed on something else.
func TestClockFaultWindowHoldsTheJump(t *testing.T) {
	step := Step{Offset: "+6", Duration: time.Millisecond}
	tests := []struct {
		name   string
		inject func(context.Context, Env, Step) error
		want   []string
	}{
		{"clock-bump", runClockBump, []string{`log clock-bump`, `clock valkey-0 "+6"`, `clock valkey-0 ""`, `log clock-reset`}},
		{"clock-bump-node", func(ctx context.Context, env Env, s Step) error {
			return BumpNodeClock(ctx, env, env.Cluster().Nodes()[0], s)
		}, []string{`log clock-bump-node`, `clock valkey-0 "+6"`, `clock valkey-0 ""`, `log clock-reset-node`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &callLog{}
			if err := tt.inject(context.Background(), c, step); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.calls, tt.want) {
				t.Errorf("calls in order:\n  %q\nwant\n  %q", c.calls, tt.want)
			}
		})
	}
}
