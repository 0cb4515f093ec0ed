package lock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ProtocolVersion is the version of the exec protocol (docs/protocol.md) that
// lockjepsen speaks; a program sees it as LOCKJEPSEN_PROTOCOL.
const ProtocolVersion = 1

// execRequest is one line lockjepsen writes to the program's stdin.
type execRequest struct {
	ID       int64  `json:"id"`
	Op       string `json:"op"` // init | acquire | extend | release | unreachable
	Key      string `json:"key,omitempty"`
	Token    string `json:"token,omitempty"`
	TTLMs    int64  `json:"ttl_ms,omitempty"`   // acquire, extend
	Protocol int    `json:"protocol,omitempty"` // init
	// Addrs: unreachable, the nodes this client must send nothing to from
	// now on (empty: every node again); a pointer, so that the empty list
	// is sent as [] and not left out.
	Addrs *[]string `json:"addrs,omitempty"`
	// Cancels: cancel, the id of the request the application gave up on.
	// A cancel has no answer of its own; the cancelled request still gets
	// one, saying what the program's library made of it.
	Cancels int64 `json:"cancels,omitempty"`
	// DropReply: acquire, extend, release: lose this request's reply (the
	// connection it went out on closed as the reply arrives), and answer with
	// what the program's library then says.
	DropReply bool `json:"drop_reply,omitempty"`
}

// execReply is one line the program writes to its stdout.
type execReply struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`            // ok | fail | info
	Token   string `json:"token,omitempty"` // acquire ok: the value the program stored, if not the one it was sent
	Fence   int64  `json:"fence,omitempty"` // acquire ok: a fencing number, if the program draws one
	Error   string `json:"error,omitempty"`
	NotHeld bool   `json:"not_held,omitempty"` // extend/release fail: the server said the token does not hold the lock
	// ValidityMs: acquire/extend ok, optional: the lease the program's
	// library says is left (a Redlock's validity); 0 or less is a lock
	// handed over already expired.
	ValidityMs *int64 `json:"validity_ms,omitempty"`
	// DialMap: init ok, optional: the program dials every Valkey address
	// through LOCKJEPSEN_DIAL_MAP (--net-proxy), so a fault can slow the
	// replication path without slowing the program's own operations.
	DialMap bool `json:"dial_map,omitempty"`
	// Unreachable: init ok, optional: the program takes the "unreachable"
	// request (Redlock's partial partition, made in the clients).
	Unreachable bool `json:"unreachable,omitempty"`
	// Cancel and DropReply: init ok, optional: the program takes the
	// "cancel" request and the "drop_reply" field (the reply faults).
	Cancel    bool `json:"cancel,omitempty"`
	DropReply bool `json:"drop_reply,omitempty"`
}

// ProtocolError is a line of the program's stdout that breaks the protocol:
// not one JSON object, no id, an id never sent, a second answer. It stops
// the client (and the run) with exit code 254 (bad input).
type ProtocolError struct {
	Program string
	Line    int    // 1-based line number on the program's stdout
	Text    string // the line, cut to 200 bytes
	Why     string
}

func (e *ProtocolError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("protocol error: %s: %s: %s (docs/protocol.md)", e.Program, e.Why, e.Text)
	}
	return fmt.Sprintf("protocol error: %s, stdout line %d: %s; the line: %s (docs/protocol.md)", e.Program, e.Line, e.Why, e.Text)
}

// errExited marks the program's stdout closing while lockjepsen still talks
// to it.
var errExited = errors.New("program closed its stdout (exited?)")

type idState uint8

const (
	idPending idState = iota + 1
	idExpired         // no answer within the operation's timeout: its outcome was info
	idAnswered
)

// execConn speaks the protocol over a pair of streams: requests out, replies
// in, matched by id. One goroutine reads replies; calls wait for theirs or
// for their context.
type execConn struct {
	program string
	wmu     sync.Mutex
	w       io.Writer

	mu      sync.Mutex
	nextID  int64
	state   map[int64]idState
	waiting map[int64]chan execReply
	err     error         // first fatal error: protocol error or the program gone
	broken  chan struct{} // closed when err is set
	closing bool
}

func newExecConn(program string, w io.Writer) *execConn {
	return &execConn{program: program, w: w, state: map[int64]idState{},
		waiting: map[int64]chan execReply{}, broken: make(chan struct{})}
}

// fatal records the first fatal error and wakes every waiting call.
func (c *execConn) fatal(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.broken)
}

// Err is the fatal error, if any.
func (c *execConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// read consumes the program's stdout until EOF, delivering replies. It
// returns errExited when stdout closed while lockjepsen was still talking to
// the program (the caller adds the exit status and calls fatal).
func (c *execConn) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if perr := c.handle(n, b); perr != nil {
				c.fatal(perr)
				// Keep draining so the program never blocks on a full pipe.
				_, _ = io.Copy(io.Discard, br)
				return perr
			}
		}
		if err != nil {
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			if !closing {
				return errExited
			}
			return nil
		}
	}
}

// handle parses one line and hands the reply to its caller. A late answer to
// an operation already timed out is dropped (its outcome stays info).
func (c *execConn) handle(n int, line []byte) error {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil // a blank line carries nothing
	}
	perr := func(why string, a ...any) error {
		t := string(trimmed)
		if len(t) > 200 {
			t = t[:200] + "..."
		}
		return &ProtocolError{Program: c.program, Line: n, Text: t, Why: fmt.Sprintf(why, a...)}
	}
	rep, why := parseReply(trimmed)
	if why != "" {
		return perr("%s", why)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state[rep.ID] {
	case 0:
		return perr("answer to id %d, which lockjepsen never sent", rep.ID)
	case idAnswered:
		return perr("second answer to id %d", rep.ID)
	case idExpired:
		c.state[rep.ID] = idAnswered
		return nil
	}
	c.state[rep.ID] = idAnswered
	ch := c.waiting[rep.ID]
	delete(c.waiting, rep.ID)
	ch <- rep // buffered
	return nil
}

// parseReply decodes and checks one reply; why is "" when it is well-formed.
func parseReply(b []byte) (rep execReply, why string) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return rep, "not a JSON object: " + err.Error()
	}
	if _, has := raw["id"]; !has {
		return rep, `no "id"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, "bad field: " + err.Error()
	}
	switch rep.Type {
	case "ok", "fail", "info":
	default:
		return rep, fmt.Sprintf(`"type" %q: want ok, fail or info`, rep.Type)
	}
	if rep.Fence < 0 {
		return rep, fmt.Sprintf(`"fence" %d: want a positive number or none`, rep.Fence)
	}
	return rep, ""
}

// call sends req (its id assigned here) and waits for the answer. A context
// that ends first makes the outcome unknown: errTimeout.
func (c *execConn) call(ctx context.Context, req execRequest) (execReply, error) {
	return c.callThen(ctx, req, nil)
}

// callThen is call, with sent run (if not nil) once the request's line is
// written, given its id: what the caller does while the program works on it.
func (c *execConn) callThen(ctx context.Context, req execRequest, sent func(id int64)) (execReply, error) {
	ch := make(chan execReply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return execReply{}, c.err
	}
	c.nextID++
	req.ID = c.nextID
	c.state[req.ID] = idPending
	c.waiting[req.ID] = ch
	c.mu.Unlock()
	if written, err := c.send(req); err != nil {
		return execReply{}, err
	} else if written && sent != nil {
		sent(req.ID)
	}
	select {
	case rep := <-ch:
		return rep, nil
	case <-ctx.Done():
	case <-c.broken:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case rep := <-ch: // answered meanwhile
		return rep, nil
	default:
	}
	delete(c.waiting, req.ID)
	c.state[req.ID] = idExpired
	if c.err != nil {
		return execReply{}, c.err
	}
	return execReply{}, fmt.Errorf("%s: no answer to %s id %d within the operation timeout: %w", c.program, req.Op, req.ID, ctx.Err())
}

// cancel tells the program that the application gave up on request id. It
// has no answer: its own id is recorded as timed out, so that a program
// that answers it anyway is not stopped for it (the answer is ignored). It
// reports whether the cancel went out while id was still unanswered.
func (c *execConn) cancel(id int64) (inFlight bool) {
	c.mu.Lock()
	// A cancel drawn after the program was told to end is not sent: its
	// stdin is closed, and the failed write would read as a program gone.
	if c.err != nil || c.closing {
		c.mu.Unlock()
		return false
	}
	c.nextID++
	req := execRequest{ID: c.nextID, Op: "cancel", Cancels: id}
	c.state[req.ID] = idExpired
	_, pending := c.waiting[id]
	c.mu.Unlock()
	written, _ := c.send(req)
	return pending && written
}

// send writes req as one line. A failed write is fatal: the request may be
// half written (its outcome unknown), and the program is gone or not
// reading. written is false then; err is set only for a request that could
// not be encoded.
func (c *execConn) send(req execRequest) (written bool, err error) {
	line, err := json.Marshal(req)
	if err != nil {
		return false, err
	}
	c.wmu.Lock()
	_, werr := c.w.Write(append(line, '\n'))
	c.wmu.Unlock()
	if werr != nil {
		c.fatal(fmt.Errorf("%s: write to stdin: %w", c.program, werr))
		return false, nil
	}
	return true, nil
}
