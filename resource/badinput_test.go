package resource

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestBadInput: every malformed request gets an error that names the field and
// the fix, and changes nothing: not the row, not the attempts log.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"non-numeric fence", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"token":"t","fence":"abc","value":1}`, 400, "fence must be an integer, got a JSON string"},
		{"fractional fence", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"token":"t","fence":4.5,"value":1}`, 400, "fence must be an integer"},
		{"missing fence", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"token":"t","value":1}`, 400, "fence is missing: mode read-write checks the fence on every write"},
		{"missing fence on read", "/v1/read", `{"run_id":"job-1","client":0,"process":0,"token":"t"}`, 400, "fence is missing"},
		{"negative fence", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"token":"t","fence":-3,"value":1}`, 400, "fence -3 is negative"},
		{"missing token", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"fence":5,"value":1}`, 400, "token is missing"},
		{"missing value", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"token":"t","fence":5}`, 400, "value is missing"},
		{"value on read", "/v1/read", `{"run_id":"job-1","client":0,"process":0,"token":"t","fence":5,"value":3}`, 400, "value is not part of a read"},
		{"missing run", "/v1/write", `{"client":0,"process":0,"token":"t","fence":5,"value":1}`, 400, "run_id is missing"},
		{"missing process", "/v1/read", `{"run_id":"job-1","client":0,"token":"t","fence":5}`, 400, "process is missing"},
		{"missing client", "/v1/read", `{"run_id":"job-1","process":0,"token":"t","fence":5}`, 400, "client is missing"},
		{"misspelt field", "/v1/write", `{"run_id":"job-1","client":0,"process":0,"token":"t","fense":5,"value":1}`, 400, `unknown field "fense"; the fields are run_id`},
		{"not JSON", "/v1/write", `fence=5`, 400, "not valid JSON"},
		{"truncated JSON", "/v1/write", `{"run_id":"job-1","fence":5`, 400, "not valid JSON"},
		{"empty body", "/v1/read", ``, 400, "request body is empty"},
		{"two objects", "/v1/read", `{"run_id":"job-1","client":0,"process":0,"token":"t","fence":5} {}`, 400, "more than one JSON object"},
		{"unknown run", "/v1/write", `{"run_id":"job-9","client":0,"process":0,"token":"t","fence":5,"value":1}`, 404, `unknown run "job-9": create it first`},
		{"unknown run on read", "/v1/read", `{"run_id":"job-9","client":0,"process":0,"token":"t","fence":5}`, 404, `unknown run "job-9"`},
		{"init without run", "/v1/runs", `{}`, 400, "run_id is missing"},
		{"no such endpoint", "/v1/delete", `{}`, 404, "no such endpoint"},
	}
	for _, b := range allBackends {
		t.Run(string(b.name), func(t *testing.T) {
			svc, c := startService(t, b.fresh(t, ModeReadWrite), "job-1")
			ctx := ctxT(t)
			before := mustRow(t)(c.Row(ctx, "job-1"))
			for _, tc := range tests {
				resp, err := http.Post("http://"+svc.Addr()+tc.path, "application/json", strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				var e errorReply
				err = json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				if err != nil || resp.StatusCode != tc.status || !strings.Contains(e.Error, tc.want) {
					t.Errorf("%s: %d %q (%v); want %d and %q", tc.name, resp.StatusCode, e.Error, err, tc.status, tc.want)
				}
			}
			if after := mustRow(t)(c.Row(ctx, "job-1")); after != before {
				t.Errorf("bad input changed the row: %+v -> %+v", before, after)
			}
			if log, err := svc.Store.Attempts(ctx, ""); err != nil || len(log) != 0 {
				t.Errorf("bad input was logged: %d attempts (%v)", len(log), err)
			}
			if _, err := c.Row(ctx, "job-9"); !errors.Is(err, ErrUnknownRun) {
				t.Errorf("Row of an unknown run: %v; want ErrUnknownRun", err)
			}
		})
	}
}

// TestErrorsTellFailFromUnknown: the Go API lets a lock client record bad input
// as fail (nothing happened) and a lost connection as info (might have).
func TestErrorsTellFailFromUnknown(t *testing.T) {
	cfg := freshSQLite(t, ModeWrite)
	svc, c := startService(t, cfg, "job-1")
	ctx := ctxT(t)
	_, err := c.Write(ctx, Holder{RunID: "job-1", Token: "t"}, 1)
	var in *InputError
	if !errors.As(err, &in) || Unknown(err) {
		t.Errorf("write without fence over HTTP: %v; want an InputError, not unknown", err)
	}
	_, err = svc.Store.Write(ctx, Holder{RunID: "job-1", Token: "t"}, 1)
	if !errors.As(err, &in) || Unknown(err) {
		t.Errorf("write without fence embedded: %v; want an InputError, not unknown", err)
	}
	_, err = c.Read(ctx, Holder{RunID: "nope", Token: "t", Fence: 1})
	if !errors.Is(err, ErrUnknownRun) || Unknown(err) {
		t.Errorf("read of unknown run: %v; want ErrUnknownRun, not unknown", err)
	}
	dead := NewClient("127.0.0.1:1")
	if _, err := dead.Read(ctx, Holder{RunID: "job-1", Token: "t", Fence: 1}); !Unknown(err) {
		t.Errorf("read from a dead service: %v; want an unknown outcome", err)
	}
	if _, err := ParseMode("read_write"); err == nil || !strings.Contains(err.Error(), "use none, write or read-write") {
		t.Errorf("ParseMode(read_write): %v", err)
	}
	if _, err := Open(ctx, Config{}); err == nil {
		t.Error("Open without a database succeeded")
	}
}
