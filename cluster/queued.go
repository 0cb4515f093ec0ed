package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// Queued is a connection to a node on which one command is written while the
// node is stopped (SIGSTOP), so that on SIGCONT the node runs it in its first
// event-loop turn, before anything the resume sets in motion can answer.
//
// It exists for CLUSTER FAILOVER TAKEOVER on a replica whose link was cut:
// resumed first and sent the command after, the replica has already begun
// its resync by the time the command lands. Valkey 9 reconnects to its primary
// at once when the link drops (replicationHandlePrimaryDisconnection), and in
// a seed-1 run the takeover came 2 ms after "Reconnecting to PRIMARY", one
// reply short of the PSYNC that would have copied the grant; on a loaded
// machine the resync won and the lesson did not show (CI, cluster-takeover
// checked valid). The connection is opened while the node runs (a stopped
// process accepts nothing), and the command is written with a plain socket
// write, which returns once the bytes are in the kernel: valkey-go's
// pipelined writer says nothing about when they leave the process.
type Queued struct {
	conn net.Conn
	r    *bufio.Reader
}

// DialQueued opens the connection and checks it with a PING.
func DialQueued(ctx context.Context, addr string) (*Queued, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, commandDeadline)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	q := &Queued{conn: conn, r: bufio.NewReader(conn)}
	if err := q.Send("PING"); err != nil {
		q.Close()
		return nil, err
	}
	if _, err := q.Reply(dctx); err != nil {
		q.Close()
		return nil, fmt.Errorf("PING %s: %w", addr, err)
	}
	return q, nil
}

// Send writes one command, returning once the kernel holds it.
func (q *Queued) Send(args ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = q.conn.SetWriteDeadline(time.Now().Add(commandDeadline))
	if _, err := q.conn.Write([]byte(b.String())); err != nil {
		return fmt.Errorf("send %s: %w", args[0], err)
	}
	return nil
}

// Reply reads a one-line reply (+OK, -ERR ..., :n); an error reply is an error.
func (q *Queued) Reply(ctx context.Context) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = q.conn.SetReadDeadline(deadline)
	line, err := q.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return "", fmt.Errorf("%s", line[1:])
	}
	if line == "" || !strings.ContainsRune("+:", rune(line[0])) {
		return "", fmt.Errorf("unexpected reply %q", line)
	}
	return line[1:], nil
}

// Close closes the connection.
func (q *Queued) Close() { _ = q.conn.Close() }
