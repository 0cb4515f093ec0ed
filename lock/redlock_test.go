package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/testvalkey"
)

// TestRedlockAcquireOutcome: an acquire's outcome follows what a majority
// can hold, on five real primaries where another token already sits on
// some. Refused by a majority is a failure whatever its clean-up release
// answers (the release of the one node it got says info, as a partial
// delete must); a majority answered OK but with no validity left is
// unknown, since the token sits on a majority until the clean-up lands.
func TestRedlockAcquireOutcome(t *testing.T) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for range 5 {
		addrs = append(addrs, testvalkey.Start(t, bins.Server))
	}
	tests := []struct {
		name     string
		heldOn   []int // nodes where another client's token sits first
		ttl      time.Duration
		want     history.Type
		refused  bool // the error wraps ErrRefused
		leftover int  // nodes still holding the token afterwards
	}{
		{name: "free on every node", heldOn: nil, ttl: 5 * time.Second, want: history.OK, leftover: 5},
		{name: "one OK, four refused", heldOn: []int{1, 2, 3, 4}, ttl: 5 * time.Second, want: history.Fail, refused: true},
		{name: "two OK, three refused", heldOn: []int{0, 1, 4}, ttl: 5 * time.Second, want: history.Fail, refused: true},
		{name: "every node refused", heldOn: []int{0, 1, 2, 3, 4}, ttl: 5 * time.Second, want: history.Fail, refused: true},
		// validity = TTL - elapsed - (TTL x 0.01 + 2 ms) is below zero for
		// 1 ms: a majority answered OK, too late to use.
		{name: "majority OK, no validity left", heldOn: nil, ttl: time.Millisecond, want: history.Info},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "lock:redlock-outcome-" + string(rune('a'+i))
			ctx := context.Background()
			for _, n := range tt.heldOn {
				c := direct(t, addrs[n])
				if err := c.Do(ctx, c.B().Set().Key(key).Value("other").Px(time.Minute).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			l, err := openRedlock(Config{Recipe: Redlock, Service: endpoint.Set{Protocol: endpoint.Redlock, Addrs: addrs}, TTL: tt.ttl})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, r := l.Acquire(ctx, key, "mine", tt.ttl)
			if r.Outcome != tt.want || errors.Is(r.Err, ErrRefused) != tt.refused {
				t.Fatalf("acquire: %s (%v), want %s, wraps ErrRefused %v", r.Outcome, r.Err, tt.want, tt.refused)
			}
			left := 0
			for _, a := range addrs {
				c := direct(t, a)
				if v, _ := c.Do(ctx, c.B().Get().Key(key).Build()).ToString(); v == "mine" {
					left++
				}
			}
			if left != tt.leftover {
				t.Errorf("%d node(s) hold the token after the acquire, want %d", left, tt.leftover)
			}
		})
	}
}

func direct(t *testing.T, addr string) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
