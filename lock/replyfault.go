package lock

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// Reply faults: what happens to the reply of the next request a lock's
// connections carry, once the server has answered it (the command ran).
// They are the client-side faults a network proxy cannot aim: a proxy sees
// bytes, not which operation they belong to.
const (
	// ReplyDrop: the reply is taken off the wire and the connection closed,
	// as a reset would: the command ran, the client learns nothing, and a
	// library that retries on a broken connection sends it again.
	ReplyDrop = history.ReplyDrop
	// ReplyCancel: the caller's context is cancelled with the reply on the
	// wire and the library not yet holding it, as an application that gives
	// up on a slow call does (a request-scoped context ending); the reply
	// reaches the library 50 ms later.
	ReplyCancel = history.ReplyCancel
)

// cancelLag is how long a cancelled call's reply is held back: long enough
// that the caller's select sees its context end first.
const cancelLag = 50 * time.Millisecond

// replyFault is the one armed fault of a client process (it runs one lock).
type replyFault struct {
	mu     sync.Mutex
	mode   string
	cancel context.CancelFunc
	conn   *faultConn // the connection that carried the armed request
	fired  bool
	// landed: the fault reached its operation in flight, the command sent
	// (an exec program's cancel can go out after the program answered;
	// then it is not sent, and the fault fired without landing).
	landed bool
}

// ReplyFate is what an armed reply fault did to the operation it waited
// for: Fired, it was taken for it; Landed, it reached it in flight.
type ReplyFate struct{ Fired, Landed bool }

var armedReply replyFault

// ArmReply arms mode (ReplyDrop or ReplyCancel) for the next request any of
// the lock's connections write; cancel is the operation's context's cancel
// (ReplyCancel calls it). The returned function disarms and reports what
// the fault did: a recipe that wrote nothing on a hooked connection (an
// recipe of a consensus service, SQL or exec) leaves it unfired.
func ArmReply(mode string, cancel context.CancelFunc) (disarm func() ReplyFate, err error) {
	if mode != ReplyDrop && mode != ReplyCancel {
		return nil, fmt.Errorf("reply fault %q: want %s or %s", mode, ReplyDrop, ReplyCancel)
	}
	armedReply.mu.Lock()
	armedReply.mode, armedReply.cancel, armedReply.conn = mode, cancel, nil
	armedReply.fired, armedReply.landed = false, false
	armedReply.mu.Unlock()
	return func() ReplyFate {
		armedReply.mu.Lock()
		defer armedReply.mu.Unlock()
		fate := ReplyFate{Fired: armedReply.fired, Landed: armedReply.landed}
		armedReply.mode, armedReply.cancel, armedReply.conn = "", nil, nil
		return fate
	}, nil
}

// wrote notes that c carried a request while a fault was armed: the next
// bytes it reads are that request's reply (or an earlier one's, which only
// makes the fault land a reply sooner, on the same operation's connection).
func (f *replyFault) wrote(c *faultConn) {
	f.mu.Lock()
	if f.mode != "" && f.conn == nil {
		f.conn = c
	}
	f.mu.Unlock()
}

// unbind frees the fault from c, whose request ended in an error reply, for
// the operation's next request.
func (f *replyFault) unbind(c *faultConn) {
	f.mu.Lock()
	if f.conn == c && !f.fired {
		f.conn = nil
	}
	f.mu.Unlock()
}

// take reports the mode to apply to bytes c just read, once.
func (f *replyFault) take(c *faultConn) (string, context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != c || f.fired {
		return "", nil
	}
	// The hook holds the reply the command's run produced: the fault
	// lands as it fires.
	f.fired, f.landed = true, true
	return f.mode, f.cancel
}

// takeExec takes the armed fault for an exec program's next operation,
// once, when the program takes its mode (takes: what it said at init); ""
// otherwise, and the fault stays unfired.
func (f *replyFault) takeExec(takes func(mode string) bool) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode == "" || f.fired || !takes(f.mode) {
		return ""
	}
	f.fired = true
	return f.mode
}

// land notes that the fault taken by takeExec reached its operation in
// flight.
func (f *replyFault) land() {
	f.mu.Lock()
	f.landed = true
	f.mu.Unlock()
}

// ExecReplyField is the exec protocol's name for a reply fault mode: the
// request (cancel) or request field (drop_reply) a program takes, and the
// field of its init answer that says so.
func ExecReplyField(mode string) string {
	if mode == ReplyDrop {
		return "drop_reply"
	}
	return mode
}

// replyFaultDoes says what a reply fault does, for a program's refusal.
var replyFaultDoes = map[string]string{
	ReplyCancel: "cancels an operation mid-flight",
	ReplyDrop:   "loses the reply of an operation that ran",
}

// faultConn is a lock connection the reply faults can reach. Unarmed it
// passes everything through.
type faultConn struct{ net.Conn }

// connErrors counts the reads and writes that failed on any hooked
// connection of the process: a library that retries on a broken connection
// (go-redis) can have sent a command twice only if this moved meanwhile.
var connErrors atomic.Int64

func (c *faultConn) Write(b []byte) (int, error) {
	// Bound before the bytes go out: the reply can reach the reading
	// goroutine before this one returns from the write, and a fault bound
	// after it missed that reply (valkeylock's release: 2 of 30 runs of
	// TestReplyFaults).
	if len(b) > 0 && carriesOperation(b) {
		armedReply.wrote(c)
	}
	n, err := c.Conn.Write(b)
	if err != nil {
		connErrors.Add(1)
	}
	return n, err
}

// notOperations are the commands a library sends on its own, beside the
// caller's operation: a connection's handshake, its liveness PING, a
// Sentinel client's discovery and its subscription to Sentinel's events, a
// cluster client's refresh of its slot map. None is the armed request, and
// binding the fault to one aims it at the wrong reply or at none: valkey-go
// subscribes to Sentinel's events from a goroutine of its own, so the
// SUBSCRIBE can go out after the fault is armed; its replies are all
// pushes, and the fault, bound to that connection, never fired (CI saw
// TestReplyFaults fail so on the lua and redsync releases).
var notOperations = map[string]bool{
	"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "READONLY": true, "PING": true,
	"SENTINEL": true, "CLUSTER": true,
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true,
	"UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SUNSUBSCRIBE": true,
}

// carriesOperation reports whether a write may carry the armed request:
// whether any command in it is not one of notOperations. A write it
// cannot read as whole RESP requests counts as an operation's.
func carriesOperation(b []byte) bool {
	names, ok := commandNames(b)
	if !ok {
		return true
	}
	for _, name := range names {
		if !notOperations[strings.ToUpper(name)] {
			return true
		}
	}
	return false
}

// commandNames reads the name of each request in b, RESP arrays of bulk
// strings ("*<n>\r\n$<len>\r\n<name>\r\n..."); ok is false when b is
// not whole requests of that form.
func commandNames(b []byte) (names []string, ok bool) {
	for len(b) > 0 {
		end := respEnd(b)
		if b[0] != '*' || end < 0 {
			return nil, false
		}
		_, args, _ := respLength(b, '*')
		l, name, ok := respLength(args, '$')
		if !ok || l < 0 || len(name) < l {
			return nil, false
		}
		names = append(names, string(name[:l]))
		b = b[end:]
	}
	return names, len(names) > 0
}

// respLength reads "<kind><length>\r\n" at the start of b.
func respLength(b []byte, kind byte) (int, []byte, bool) {
	if len(b) == 0 || b[0] != kind {
		return 0, nil, false
	}
	size, rest, ok := bytes.Cut(b[1:], []byte("\r\n"))
	if !ok {
		return 0, nil, false
	}
	l, err := strconv.Atoi(string(size))
	return l, rest, err == nil
}

func (c *faultConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		connErrors.Add(1)
	}
	// An error reply ('-', RESP3 '!': a NOSCRIPT before the script's EVAL,
	// a refusal) had no effect, and a push ('>') answers no request: the
	// fault waits for the reply of a command that ran, on whichever
	// connection carries the next request (valkey-go sends the EVAL after
	// a NOSCRIPT on another connection than the EVALSHA's). A push can
	// share a read with the reply behind it (a tracking client's
	// invalidation), so the pushes ahead are passed over, not the read.
	if n == 0 {
		return n, err
	}
	at := pushesAhead(b[:n])
	if at == n {
		return n, err
	}
	if b[at] == '-' || b[at] == '!' {
		armedReply.unbind(c)
		return n, err
	}
	switch mode, cancel := armedReply.take(c); mode {
	case ReplyDrop:
		connErrors.Add(1)
		_ = c.Conn.Close()
		if at > 0 {
			// The pushes reach the library; the reply and the
			// connection are gone, as the next read says.
			return at, nil
		}
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: fmt.Errorf("reply dropped by the fault: %w", syscall.ECONNRESET)}
	case ReplyCancel:
		cancel()
		time.Sleep(cancelLag)
	}
	return n, err
}

// pushesAhead is how many bytes of b the whole pushes at its start take: 0
// when b starts with no push, len(b) when nothing but pushes (or a push cut
// short) is there.
func pushesAhead(b []byte) int {
	at := 0
	for at < len(b) && b[at] == '>' {
		end := respEnd(b[at:])
		if end < 0 {
			return len(b)
		}
		at += end
	}
	return at
}

// respEnd is the length of the RESP value at the start of b, or -1 when b
// holds no whole value of a type it knows.
func respEnd(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch b[0] {
	case '+', '-', ':', '_', '#', ',', '(':
		if i := bytes.Index(b, []byte("\r\n")); i >= 0 {
			return i + 2
		}
		return -1
	}
	l, rest, ok := respLength(b, b[0])
	if !ok {
		return -1
	}
	head := len(b) - len(rest)
	switch b[0] {
	case '$', '!', '=':
		if l < 0 {
			return head
		}
		if len(rest) < l+2 {
			return -1
		}
		return head + l + 2
	case '*', '~', '>', '%', '|':
		if b[0] == '%' || b[0] == '|' {
			l *= 2
		}
		at := head
		for i := 0; i < l; i++ {
			end := respEnd(b[at:])
			if end < 0 {
				return -1
			}
			at += end
		}
		return at
	}
	return -1
}

// hookedDial is valkey-go's dial with the reply faults' hook, for the
// connections that dial no mapped address (Redlock's nodes).
func hookedDial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	return hookConn(d.DialContext(ctx, "tcp", addr))
}

// ReachesReplies reports whether the reply faults reach the recipe's calls,
// as its entry declares (Recipe.Replies).
func (r Recipe) ReachesReplies() bool { return r.Replies }

// live is every hooked connection not yet closed, for DropConns.
var live = struct {
	sync.Mutex
	m map[*faultConn]bool
}{m: map[*faultConn]bool{}}

// hookConn wraps a lock connection for the reply faults and DropConns.
func hookConn(c net.Conn, err error) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c}
	live.Lock()
	live.m[fc] = true
	live.Unlock()
	return fc, nil
}

func (c *faultConn) Close() error {
	live.Lock()
	delete(live.m, c)
	live.Unlock()
	return c.Conn.Close()
}

// DropConns closes every hooked connection of the process from the
// client's side, as a NAT or a load balancer that forgets a connection
// does, and reports how many it closed. A lease outlives its connection; a
// session lock (PostgreSQL's advisory lock) ends with its session.
func DropConns() int {
	live.Lock()
	cs := make([]*faultConn, 0, len(live.m))
	for c := range live.m {
		cs = append(cs, c)
	}
	live.m = map[*faultConn]bool{}
	live.Unlock()
	for _, c := range cs {
		connErrors.Add(1)
		_ = c.Conn.Close()
	}
	return len(cs)
}
