package lock

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Reply faults: what happens to the reply of the next request a lock's
// connections carry, once the server has answered it (the command ran).
// They are the client-side faults a network proxy cannot aim: a proxy sees
// bytes, not which operation they belong to.
const (
	// ReplyDrop: the reply is taken off the wire and the connection closed,
	// as a reset would: the command ran, the client learns nothing, and a
	// library that retries on a broken connection sends it again.
	ReplyDrop = "drop"
	// ReplyCancel: the caller's context is cancelled with the reply on the
	// wire and the library not yet holding it, as an application that gives
	// up on a slow call does (a request-scoped context ending); the reply
	// reaches the library 50 ms later.
	ReplyCancel = "cancel"
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
}

var armedReply replyFault

// ArmReply arms mode (ReplyDrop or ReplyCancel) for the next request any of
// the lock's connections write; cancel is the operation's context's cancel
// (ReplyCancel calls it). The returned function disarms and reports whether
// the fault fired: a recipe that wrote nothing on a hooked connection (an
// etcd, ZooKeeper, SQL or exec recipe) leaves it unfired.
func ArmReply(mode string, cancel context.CancelFunc) (disarm func() bool, err error) {
	if mode != ReplyDrop && mode != ReplyCancel {
		return nil, fmt.Errorf("reply fault %q: want %s or %s", mode, ReplyDrop, ReplyCancel)
	}
	armedReply.mu.Lock()
	armedReply.mode, armedReply.cancel, armedReply.conn, armedReply.fired = mode, cancel, nil, false
	armedReply.mu.Unlock()
	return func() bool {
		armedReply.mu.Lock()
		defer armedReply.mu.Unlock()
		fired := armedReply.fired
		armedReply.mode, armedReply.cancel, armedReply.conn = "", nil, nil
		return fired
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
	f.fired = true
	return f.mode, f.cancel
}

// faultConn is a lock connection the reply faults can reach. Unarmed it
// passes everything through.
type faultConn struct{ net.Conn }

// connErrors counts the reads and writes that failed on any hooked
// connection of the process: a library that retries on a broken connection
// (go-redis) can have sent a command twice only if this moved meanwhile.
var connErrors atomic.Int64

func (c *faultConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		connErrors.Add(1)
	}
	if n > 0 {
		armedReply.wrote(c)
	}
	return n, err
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
	// a NOSCRIPT on another connection than the EVALSHA's).
	if n == 0 || b[0] == '>' {
		return n, err
	}
	if b[0] == '-' || b[0] == '!' {
		armedReply.unbind(c)
		return n, err
	}
	switch mode, cancel := armedReply.take(c); mode {
	case ReplyDrop:
		connErrors.Add(1)
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: fmt.Errorf("reply dropped by the fault: %w", syscall.ECONNRESET)}
	case ReplyCancel:
		cancel()
		time.Sleep(cancelLag)
	}
	return n, err
}

// hookedDial is valkey-go's dial with the reply faults' hook, for the
// connections that dial no mapped address (Redlock's nodes).
func hookedDial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	return hookConn(d.DialContext(ctx, "tcp", addr))
}

// ReachesReplies reports whether the reply faults reach the recipe's
// connections: every recipe that speaks to Valkey through this package's
// clients. An exec program dials for itself, and etcd's, ZooKeeper's and
// the SQL recipes' clients are not hooked.
func (r Recipe) ReachesReplies() bool {
	return r.Server == nil && r.Fence == "" && r.Name != Exec
}

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
