package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The HTTP+JSON protocol (docs/resource.md has it with examples):
//
//	POST /v1/runs      {"run_id"}                                        → RunReply
//	POST /v1/read      {"run_id","client","process","token","fence"}     → Reply
//	POST /v1/write     {"run_id","client","process","token","fence","value"} → Reply
//	GET  /v1/runs/{id}                                                   → Row
//	GET  /v1/attempts[?run_id=ID]                                        → JSON lines of history.Attempt
//	GET  /v1/health                                                      → Health
//	POST /v1/fence     {"run_id","client","process","token"}             → FenceReply (the database's sequence)
//	POST /v1/lease/{acquire,extend,release} {"key","token","ttl_ms"}     → LeaseReply (recipe sql-lease)
//
// A rejected read or write is a normal reply (200, verdict "rejected"). Errors
// are {"error": "..."} with 400 (bad input), 404 (unknown run) or 500; after a
// 4xx nothing was changed or logged.

// opRequest is the body of /v1/read and /v1/write. Pointers tell a missing
// field from a zero.
type opRequest struct {
	RunID   string `json:"run_id"`
	Client  *int   `json:"client"`
	Process *int   `json:"process"`
	Token   string `json:"token"`
	Fence   *int64 `json:"fence"`
	Value   *int64 `json:"value"`
}

type runRequest struct {
	RunID string `json:"run_id"`
}

// RunReply answers POST /v1/runs.
type RunReply struct {
	Row
	Created bool `json:"created"` // false: the run existed and was left alone
}

// Health answers GET /v1/health.
type Health struct {
	Mode    Mode    `json:"mode"`
	Backend Backend `json:"backend"`
	Where   string  `json:"where"`
}

type errorReply struct {
	Error string `json:"error"`
}

const (
	opFields    = "run_id, client, process, token, fence, value"
	fenceFields = "run_id, client, process, token"
)

// decodeBody reads one JSON object, turning the decoder's errors into messages
// that name the field and the fix.
func decodeBody(r io.Reader, v any, fields string) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var (
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case err == nil:
		if dec.More() {
			return badInput("request body holds more than one JSON object; send exactly one")
		}
		return nil
	case errors.Is(err, io.EOF):
		return badInput(fmt.Sprintf("request body is empty; send a JSON object with %s", fields))
	case errors.As(err, &typeErr):
		want := "a string"
		if k := typeErr.Type.Kind().String(); strings.HasPrefix(k, "int") {
			want = "an integer"
		}
		return badInput(fmt.Sprintf("%s must be %s, got a JSON %s; e.g. \"fence\": 42, \"token\": \"9c1e…\"", typeErr.Field, want, typeErr.Value))
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return badInput(fmt.Sprintf("request body is not valid JSON (%v); send one object with %s", err, fields))
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return badInput(fmt.Sprintf("%s; the fields are %s", strings.TrimPrefix(err.Error(), "json: "), fields))
	}
	return badInput(fmt.Sprintf("cannot read request body: %v", err))
}

// holder turns a decoded request into a Holder, refusing missing fields that
// the Go API cannot express as missing.
func (q *opRequest) holder(op string) (Holder, int64, error) {
	switch {
	case q.Client == nil:
		return Holder{}, 0, badInput("client is missing: send the client slot, e.g. \"client\": 0")
	case q.Process == nil:
		return Holder{}, 0, badInput("process is missing: send the history process number, e.g. \"process\": 3")
	case op == OpWrite && q.Value == nil:
		return Holder{}, 0, badInput("value is missing: a write sends the new value (the value read plus one)")
	case op == OpRead && q.Value != nil:
		return Holder{}, 0, badInput("value is not part of a read; send it with POST /v1/write")
	}
	h := Holder{RunID: q.RunID, Client: *q.Client, Process: *q.Process, Token: q.Token}
	if q.Fence != nil {
		h.Fence = *q.Fence
	}
	var v int64
	if q.Value != nil {
		v = *q.Value
	}
	return h, v, nil
}
