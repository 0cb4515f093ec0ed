package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client speaks the protocol to a resource service. It is safe for concurrent
// use and keeps connections alive, so 64 writers do not churn sockets.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client for addr, "127.0.0.1:PORT" or an http:// URL.
// Operations have no timeout of their own: pass a context with a deadline.
func NewClient(addr string) *Client {
	base := strings.TrimRight(addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	tr := &http.Transport{
		Proxy:               nil, // loopback only; a proxy from the environment would be wrong
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Client{base: base, hc: &http.Client{Transport: tr}}
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// ErrorReply is an error status from the service. For 400 and 404 nothing was
// changed or logged; errors.As finds *InputError, errors.Is finds ErrUnknownRun.
type ErrorReply struct {
	Status int
	Msg    string
}

func (e *ErrorReply) Error() string { return fmt.Sprintf("resource: %d: %s", e.Status, e.Msg) }

// Unwrap maps the status to the errors Store returns for the same cases.
func (e *ErrorReply) Unwrap() error {
	switch e.Status {
	case http.StatusBadRequest:
		return &InputError{Msg: e.Msg}
	case http.StatusNotFound:
		return ErrUnknownRun
	}
	return nil
}

// Unknown reports whether an operation that returned err may still have taken
// effect: a lost connection, a timeout, a failed commit. The history records it
// as info; anything else (bad input, unknown run) as fail.
func Unknown(err error) bool {
	var in *InputError
	return err != nil && !errors.As(err, &in) && !errors.Is(err, ErrUnknownRun)
}

// Read asks for the run's value, presenting h's fence in mode read-write.
func (c *Client) Read(ctx context.Context, h Holder) (Reply, error) {
	var rep Reply
	err := c.post(ctx, "/v1/read", wireHolder(h, nil), &rep)
	return rep, err
}

// Write asks to set the run's value, presenting h's fence.
func (c *Client) Write(ctx context.Context, h Holder, value int64) (Reply, error) {
	var rep Reply
	err := c.post(ctx, "/v1/write", wireHolder(h, &value), &rep)
	return rep, err
}

// Fence asks the resource for a number from the database's own sequence.
func (c *Client) Fence(ctx context.Context, h Holder) (FenceReply, error) {
	var rep FenceReply
	q := wireHolder(h, nil)
	q.Fence = nil
	err := c.post(ctx, "/v1/fence", q, &rep)
	return rep, err
}

// Lease runs one lease operation (LeaseAcquire, LeaseExtend, LeaseRelease) of
// the database's own lock.
func (c *Client) Lease(ctx context.Context, op string, q LeaseRequest) (LeaseReply, error) {
	var rep LeaseReply
	err := c.post(ctx, "/v1/lease/"+op, q, &rep)
	return rep, err
}

// InitRun creates the run unless it exists and reports whether it created it.
func (c *Client) InitRun(ctx context.Context, runID string) (bool, error) {
	var rep RunReply
	err := c.post(ctx, "/v1/runs", runRequest{RunID: runID}, &rep)
	return rep.Created, err
}

// Row returns the run's state without logging an attempt.
func (c *Client) Row(ctx context.Context, runID string) (Row, error) {
	var row Row
	err := c.get(ctx, "/v1/runs/"+url.PathEscape(runID), func(r io.Reader) error {
		return json.NewDecoder(r).Decode(&row)
	})
	return row, err
}

// Health returns the service's mode and database.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.get(ctx, "/v1/health", func(r io.Reader) error { return json.NewDecoder(r).Decode(&h) })
	return h, err
}

// ExportAttempts copies the attempts log (JSON lines) of one run, or all runs
// when runID is empty, to w.
func (c *Client) ExportAttempts(ctx context.Context, w io.Writer, runID string) (int64, error) {
	var n int64
	err := c.get(ctx, "/v1/attempts?run_id="+url.QueryEscape(runID), func(r io.Reader) error {
		var err error
		n, err = io.Copy(w, r)
		return err
	})
	return n, err
}

func wireHolder(h Holder, value *int64) opRequest {
	q := opRequest{RunID: h.RunID, Client: &h.Client, Process: &h.Process, Token: h.Token, Value: value}
	if h.Fence != 0 {
		q.Fence = &h.Fence
	}
	return q
}

func (c *Client) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("resource: encode %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("resource: %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, func(r io.Reader) error { return json.NewDecoder(r).Decode(out) })
}

func (c *Client) get(ctx context.Context, path string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("resource: %s: %w", path, err)
	}
	return c.do(req, read)
}

func (c *Client) do(req *http.Request, read func(io.Reader) error) error {
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("resource: %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e errorReply
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &ErrorReply{Status: resp.StatusCode, Msg: e.Error}
	}
	if err := read(resp.Body); err != nil {
		return fmt.Errorf("resource: reply to %s %s: %w", req.Method, req.URL.Path, err)
	}
	// Drain so the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}
