package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
)

// fakeProgram is the program's side of an execConn: it sees requests and
// writes reply lines to the conn's reader.
type fakeProgram struct {
	mu   sync.Mutex
	reqs []execRequest
	got  chan execRequest
}

func (f *fakeProgram) Write(p []byte) (int, error) {
	var r execRequest
	if err := json.Unmarshal(p, &r); err != nil {
		return 0, err
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	f.got <- r
	return len(p), nil
}

// TestExecProtocol drives the codec with scripted reply lines: each case
// sends one request (id 1) and then writes its lines; it checks the call's
// outcome and whether the conn broke with a protocol error naming the line.
func TestExecProtocol(t *testing.T) {
	tests := []struct {
		name     string
		lines    []string // written after the request is seen
		timeout  time.Duration
		wantType string // the reply's type; "" when the call must return an error
		wantErr  string // in the call's error or the conn's fatal error
		badLine  int    // the protocol error's line, 0: none
	}{
		{name: "ok with token and fence", lines: []string{`{"id":1,"type":"ok","token":"t","fence":42}`}, wantType: "ok"},
		{name: "fail", lines: []string{`{"id":1,"type":"fail","error":"held","not_held":true}`}, wantType: "fail"},
		{name: "info", lines: []string{`{"id":1,"type":"info"}`}, wantType: "info"},
		{name: "unknown fields are ignored", lines: []string{`{"id":1,"type":"ok","library":"x"}`}, wantType: "ok"},
		{name: "blank lines are ignored", lines: []string{``, `  `, `{"id":1,"type":"ok"}`}, wantType: "ok"},
		{name: "malformed line", lines: []string{`{"id":1,"type":"ok"`}, wantErr: "not a JSON object", badLine: 1},
		{name: "not an object", lines: []string{`OK`}, wantErr: "not a JSON object", badLine: 1},
		{name: "no id", lines: []string{`{"type":"ok"}`}, wantErr: `no "id"`, badLine: 1},
		{name: "id not a number", lines: []string{`{"id":"1","type":"ok"}`}, wantErr: "bad field", badLine: 1},
		{name: "bad type", lines: []string{`{"id":1,"type":"maybe"}`}, wantErr: `"type" "maybe"`, badLine: 1},
		{name: "negative fence", lines: []string{`{"id":1,"type":"ok","fence":-1}`}, wantErr: "fence", badLine: 1},
		{name: "unknown id", lines: []string{`{"id":7,"type":"ok"}`}, wantErr: "never sent", badLine: 1},
		{name: "second answer", lines: []string{`{"id":1,"type":"ok"}`, `{"id":1,"type":"fail"}`}, wantType: "ok", wantErr: "second answer to id 1", badLine: 2},
		{name: "timeout is info", timeout: 50 * time.Millisecond, wantErr: "no answer to acquire id 1 within the operation timeout"},
		{name: "late answer after a timeout is dropped", timeout: 50 * time.Millisecond, lines: []string{`{"id":1,"type":"ok"}`}, wantErr: "no answer"},
		{name: "stdout closed", lines: nil, wantErr: "closed its stdout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := &fakeProgram{got: make(chan execRequest, 4)}
			c := newExecConn("prog", prog)
			pr, pw := io.Pipe()
			readDone := make(chan error, 1)
			go func() { readDone <- c.read(pr) }()
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 2 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			type res struct {
				rep execReply
				err error
			}
			done := make(chan res, 1)
			go func() {
				rep, err := c.call(ctx, execRequest{Op: "acquire", Key: "lock:{k}", Token: "t", TTLMs: 1000})
				done <- res{rep, err}
			}()
			req := <-prog.got
			if req.ID != 1 || req.Op != "acquire" || req.Key != "lock:{k}" || req.TTLMs != 1000 {
				t.Fatalf("request %+v", req)
			}
			if tt.timeout > 0 {
				time.Sleep(tt.timeout + 20*time.Millisecond)
			}
			for _, l := range tt.lines {
				if _, err := io.WriteString(pw, l+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "stdout closed" || tt.badLine > 0 {
				pw.Close()
				err := <-readDone
				if tt.name == "stdout closed" {
					if !errors.Is(err, errExited) {
						t.Fatalf("read ended %v, want errExited", err)
					}
					c.fatal(errors.New("prog closed its stdout"))
				}
			}
			r := <-done
			if tt.wantType != "" {
				if r.err != nil || r.rep.Type != tt.wantType {
					t.Fatalf("call: %+v, %v; want type %s", r.rep, r.err, tt.wantType)
				}
			} else if r.err == nil {
				t.Fatalf("call: %+v, want an error", r.rep)
			}
			got := ""
			if r.err != nil {
				got = r.err.Error()
			}
			if err := c.Err(); err != nil {
				got += " | " + err.Error()
			}
			if tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("errors %q, want %q", got, tt.wantErr)
			}
			var pe *ProtocolError
			isPE := errors.As(c.Err(), &pe)
			switch {
			case tt.badLine == 0 && isPE:
				t.Fatalf("unexpected protocol error: %v", pe)
			case tt.badLine > 0 && (!isPE || pe.Line != tt.badLine || pe.Program != "prog"):
				t.Fatalf("protocol error %v, want one naming prog's line %d", c.Err(), tt.badLine)
			}
			if tt.badLine == 0 {
				pw.Close()
			}
		})
	}
}

// TestExecReplyFaults: an armed reply fault reaches an exec program's next
// operation once, and only when the program took its mode at init: drop as
// the request's drop_reply field, cancel as a cancel request naming the
// operation's id after it, whose own id a stray answer may use. The
// operation's outcome is the program's answer to it. A cancel whose moment
// comes after the answer is not sent: it fired without landing.
func TestExecReplyFaults(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mode           string
		cancels, drops bool // what the program said at init
		answerFirst    bool // the program answers before the cancel's moment
		fires, lands   bool
	}{
		{"drop taken", ReplyDrop, false, true, false, true, true},
		{"cancel taken", ReplyCancel, true, false, false, true, true},
		{"cancel answered first", ReplyCancel, true, false, true, true, false},
		{"drop not taken", ReplyDrop, true, false, false, false, false},
		{"cancel not taken", ReplyCancel, false, true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := &fakeProgram{got: make(chan execRequest, 8)}
			l := &execLock{cfg: Config{Recipe: "exec:prog"}, conn: newExecConn("prog", prog), tokens: map[string]string{},
				validity: map[string]time.Duration{}, cancels: tc.cancels, drops: tc.drops}
			if tc.answerFirst {
				l.usual = time.Hour // the cancel's moment, drawn within it, comes long after the answer
			}
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() { _ = l.conn.read(pr) }()
			disarm, err := ArmReply(tc.mode, func() {})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan Result, 2)
			go func() { done <- l.Release(context.Background(), "lock:{k}", "t") }()
			req := <-prog.got
			if req.Op != "release" || req.DropReply != (tc.fires && tc.mode == ReplyDrop) {
				t.Fatalf("request %+v: drop_reply %v, want %v", req, req.DropReply, tc.fires && tc.mode == ReplyDrop)
			}
			if tc.fires && tc.mode == ReplyCancel && !tc.answerFirst {
				c := <-prog.got
				if c.Op != "cancel" || c.Cancels != req.ID || c.ID == req.ID {
					t.Fatalf("after the release: %+v, want a cancel of id %d", c, req.ID)
				}
				// A program may answer the cancel too; that is no protocol error.
				if _, err := io.WriteString(pw, fmt.Sprintf(`{"id":%d,"type":"ok"}`+"\n", c.ID)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := io.WriteString(pw, fmt.Sprintf(`{"id":%d,"type":"info","error":"cancelled"}`+"\n", req.ID)); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.Outcome != history.Info {
				t.Fatalf("outcome %v, want the program's info", r)
			}
			if fate := disarm(); fate.Fired != tc.fires || fate.Landed != tc.lands {
				t.Fatalf("%+v, want fired %v, landed %v", fate, tc.fires, tc.lands)
			}
			// Fired or not, the next operation carries nothing.
			go func() { done <- l.Release(context.Background(), "lock:{k}", "t") }()
			next := <-prog.got
			if next.Op != "release" || next.DropReply {
				t.Fatalf("next request %+v carries the fault", next)
			}
			select {
			case extra := <-prog.got:
				t.Fatalf("a second cancel: %+v", extra)
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := io.WriteString(pw, fmt.Sprintf(`{"id":%d,"type":"ok"}`+"\n", next.ID)); err != nil {
				t.Fatal(err)
			}
			if r := <-done; !r.Ok() || l.conn.Err() != nil {
				t.Fatalf("next release %v, conn %v", r, l.conn.Err())
			}
		})
	}
}

// TestExecOutcomes maps replies to the history's outcomes; not_held is the
// only fail that stops the critical section.
func TestExecOutcomes(t *testing.T) {
	l := &execLock{tokens: map[string]string{}}
	cases := []struct {
		rep     execReply
		err     error
		want    history.Type
		notHeld bool
	}{
		{execReply{Type: "ok"}, nil, history.OK, false},
		{execReply{Type: "fail", Error: "READONLY"}, nil, history.Fail, false},
		{execReply{Type: "fail", NotHeld: true}, nil, history.Fail, true},
		{execReply{Type: "info", Error: "timeout"}, nil, history.Info, false},
		{execReply{}, errors.New("no answer"), history.Info, false},
	}
	for _, c := range cases {
		r := l.outcome("extend", c.rep, c.err)
		if r.Outcome != c.want || NotHeld(r) != c.notHeld {
			t.Errorf("%+v, %v: %s not-held %v, want %s not-held %v", c.rep, c.err, r.Outcome, NotHeld(r), c.want, c.notHeld)
		}
	}
}

func TestExecLookup(t *testing.T) {
	if r, err := Lookup("exec:../examples/valkey-cli/adapter.sh"); err != nil || r.Name != Exec || !r.Fences() {
		t.Fatalf("Lookup exec:PATH: %+v, %v", r, err)
	}
	for _, bad := range []string{"exec", "exec:", "exec:/no/such/program", "exec:execproto.go"} {
		if _, err := Lookup(bad); err == nil {
			t.Errorf("Lookup(%q) accepted", bad)
		}
	}
	cfg := Config{Recipe: "native", Service: endpoint.One("x"), ExecArgs: []string{"a"}}
	if err := cfg.Validate(); err == nil {
		t.Errorf("exec args accepted for native")
	}
}

// TestExecValidity: an ok reply's optional validity_ms becomes the token's
// validity; none reported is 0 (the TTL holds); 0 or less is kept below 0,
// what the checker counts as a lock handed over expired.
func TestExecValidity(t *testing.T) {
	cases := []struct {
		line string
		want time.Duration
	}{
		{`{"id":1,"type":"ok"}`, 0},
		{`{"id":1,"type":"ok","validity_ms":1500}`, 1500 * time.Millisecond},
		{`{"id":1,"type":"ok","validity_ms":0}`, -time.Millisecond},
		{`{"id":1,"type":"ok","validity_ms":-20}`, -20 * time.Millisecond},
	}
	for _, c := range cases {
		rep, why := parseReply([]byte(c.line))
		if why != "" {
			t.Fatalf("%s: %s", c.line, why)
		}
		l := &execLock{tokens: map[string]string{}, validity: map[string]time.Duration{"tok": 7 * time.Second}}
		l.noteValidity("tok", rep)
		if got := l.Validity("tok"); got != c.want {
			t.Errorf("%s: validity %v, want %v", c.line, got, c.want)
		}
	}
}
