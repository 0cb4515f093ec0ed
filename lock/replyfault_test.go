package lock

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// TestReplyFaults: each Valkey recipe's acquire and release, its reply
// dropped or its call cancelled after the command ran, reaches the hook and
// ends in an outcome the server's state bears out: a definite answer (ok,
// fail) must match what the key holds afterwards; info may be either. A
// recipe that turned a lost reply into a definite "no effect" fails here:
// redislock's release once did (go-redis retried the script, the retry found
// the key gone, ErrLockNotHeld read as fail while the first try had freed it).
func TestReplyFaults(t *testing.T) {
	// valkeylock keeps its lock under keys of its own: the key's state
	// says nothing of its outcome, only that the hook fired.
	recipes := []struct {
		name  string
		keyed bool
	}{{Native, true}, {Lua, true}, {Unsafe, true}, {Redsync, true}, {Redislock, true}, {Valkeylock, false}}
	for _, rc := range recipes {
		for _, op := range []string{history.FAcquire, history.FRelease} {
			for _, mode := range []string{ReplyDrop, ReplyCancel} {
				t.Run(fmt.Sprintf("%s/%s/%s", rc.name, op, mode), func(t *testing.T) {
					key := fmt.Sprintf("lock:{reply-%s-%s-%s}", rc.name, op, mode)
					l := open(t, testConfig(rc.name))
					tok := NewToken()
					if op == history.FRelease {
						mustOutcome(t, "acquire", second(l.Acquire(opCtx(t), key, tok, 2*time.Second)), history.OK)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					disarm, err := ArmReply(mode, cancel)
					if err != nil {
						t.Fatal(err)
					}
					var r Result
					if op == history.FAcquire {
						_, r = l.Acquire(ctx, key, tok, 2*time.Second)
					} else {
						r = l.Release(ctx, key, tok)
					}
					if !disarm().Fired {
						t.Fatalf("the fault never fired: no reply of the %s reached the hook (outcome %s)", op, r.Outcome)
					}
					if !rc.keyed || r.Outcome == history.Info {
						return
					}
					holds := get(t, key) == tok
					// What the key must hold after each definite answer.
					want := map[string]map[history.Type]bool{
						history.FAcquire: {history.OK: true, history.Fail: false},
						history.FRelease: {history.OK: false, history.Fail: true},
					}[op][r.Outcome]
					if holds != want {
						t.Fatalf("%s ended %s (%v), yet the key holds the token: %v", op, r.Outcome, r.Err, holds)
					}
				})
			}
		}
	}
}

func second(_ int64, r Result) Result { return r }

// scriptedConn answers every read with its reply and swallows writes.
type scriptedConn struct {
	net.Conn
	reply string
}

func (c scriptedConn) Write(b []byte) (int, error) { return len(b), nil }
func (c scriptedConn) Read(b []byte) (int, error)  { return copy(b, c.reply), nil }

// TestReplyFaultPassesOverLibraryCommands: what a library writes on its own
// while the fault is armed (a Sentinel subscription sent from a goroutine,
// Sentinel's discovery, a handshake, a ping) does not take the fault from the operation's request
// on another connection.
func TestReplyFaultPassesOverLibraryCommands(t *testing.T) {
	cases := []struct {
		name, background, reply string
	}{
		{"sentinel subscription", "*2\r\n$9\r\nSUBSCRIBE\r\n$14\r\n+switch-master\r\n", ">3\r\n$9\r\nsubscribe\r\n"},
		{"go-redis lower case", "*2\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n", ">3\r\n$9\r\nsubscribe\r\n"},
		{"sentinel discovery", "*3\r\n$8\r\nSENTINEL\r\n$9\r\nSENTINELS\r\n$10\r\nlockjepsen\r\n", "*0\r\n"},
		{"handshake", "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n", "%0\r\n"},
		{"ping", "*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{"unsubscribe and discovery", "*1\r\n$11\r\nUNSUBSCRIBE\r\n*3\r\n$8\r\nSENTINEL\r\n$9\r\nSENTINELS\r\n$10\r\nlockjepsen\r\n", ">3\r\n$11\r\nunsubscribe\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cancelled := false
			disarm, err := ArmReply(ReplyCancel, func() { cancelled = true })
			if err != nil {
				t.Fatal(err)
			}
			library := &faultConn{Conn: scriptedConn{reply: tc.reply}}
			op := &faultConn{Conn: scriptedConn{reply: ":1\r\n"}}
			buf := make([]byte, 64)
			mustIO(t)(library.Write([]byte(tc.background)))
			mustIO(t)(op.Write([]byte("*4\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n$3\r\nkey\r\n")))
			mustIO(t)(library.Read(buf))
			if cancelled {
				t.Fatalf("the fault fired on the library's own %q", tc.reply)
			}
			mustIO(t)(op.Read(buf))
			if fate := disarm(); !fate.Fired || !fate.Landed || !cancelled {
				t.Fatal("the fault did not fire on the operation's reply")
			}
		})
	}
}

func mustIO(t *testing.T) func(int, error) {
	return func(_ int, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCommandNames(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"*1\r\n$4\r\nPING\r\n", []string{"PING"}, true},
		{"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n", []string{"set"}, true},
		{"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", []string{"PING", "GET"}, true},
		{"PING\r\n", nil, false},
		{"*1\r\n$9\r\nPING\r\n", nil, false},
		{"*2\r\n$4\r\nPING\r\n", nil, false},
		{"*1\r\n$-1\r\n", nil, false},
		{"", nil, false},
	}
	for _, tc := range cases {
		got, ok := commandNames([]byte(tc.in))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || ok != tc.ok {
			t.Errorf("commandNames(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPushesAhead(t *testing.T) {
	invalidate := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n"
	cases := []struct {
		in   string
		want int
	}{
		{":1\r\n", 0},
		{invalidate, len(invalidate)},
		{invalidate + ":1\r\n", len(invalidate)},
		{invalidate + invalidate + "+OK\r\n", 2 * len(invalidate)},
		{invalidate[:10], 10},
		{">1\r\n%1\r\n+a\r\n_\r\n-ERR x\r\n", 15},
	}
	for _, tc := range cases {
		if got := pushesAhead([]byte(tc.in)); got != tc.want {
			t.Errorf("pushesAhead(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
