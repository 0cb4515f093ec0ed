package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valkey-io/valkey-go"
)

// admin keeps one small valkey-go connection per node for control traffic
// (INFO, SENTINEL, CLIENT KILL), separate from the clients under test.
type admin struct {
	mu      sync.Mutex
	clients map[string]valkey.Client
}

func newAdmin() *admin { return &admin{clients: map[string]valkey.Client{}} }

func (a *admin) client(addr string) (c valkey.Client, cached bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[addr]; ok {
		return c, true, nil
	}
	c, err = valkey.NewClient(valkey.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		AlwaysRESP2:       true,
		DisableRetry:      true,
		Dialer:            net.Dialer{Timeout: 500 * time.Millisecond},
		ConnWriteTimeout:  commandDeadline,
	})
	if err != nil {
		return nil, false, fmt.Errorf("connect %s: %w", addr, err)
	}
	a.clients[addr] = c
	return c, false, nil
}

func (a *admin) drop(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[addr]; ok {
		c.Close()
		delete(a.clients, addr)
	}
}

func (a *admin) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, c := range a.clients {
		c.Close()
		delete(a.clients, k)
	}
}

// do runs one command with a deadline; on a connection error the cached client
// is dropped so the next call reconnects to a restarted node, and a command
// that met a connection the server had closed is run once more, anew.
func (a *admin) do(ctx context.Context, addr string, args ...string) (valkey.ValkeyResult, error) {
	c, cached, err := a.client(addr)
	if err != nil {
		return valkey.ValkeyResult{}, err
	}
	dctx, cancel := context.WithTimeout(ctx, commandDeadline)
	defer cancel()
	r := c.Do(dctx, c.B().Arbitrary(args[0]).Args(args[1:]...).Build())
	if err := r.Error(); err != nil && !valkey.IsValkeyNil(err) {
		if _, isErr := valkey.IsValkeyErr(err); !isErr {
			a.drop(addr)
			// Sentinel reconfigures a node it demotes with REPLICAOF, CONFIG
			// REWRITE and CLIENT KILL TYPE normal, which closes our idle
			// connection too; the next command on it reads EOF without having
			// been sent (seen in a sweep: "REPLICAOF NO ONE: EOF" ended a
			// resync-window trial with no verdict). One retry on a new
			// connection; every control command here is idempotent.
			if cached && closedConn(err) {
				return a.do(ctx, addr, args...)
			}
		}
		return r, fmt.Errorf("%s %s: %w", addr, strings.Join(args, " "), err)
	}
	return r, nil
}

// closedConn reports an error of a connection the server had closed.
func closedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// info returns INFO <section> as a field map.
func (a *admin) info(ctx context.Context, addr, section string) (map[string]string, error) {
	r, err := a.do(ctx, addr, "INFO", section)
	if err != nil {
		return nil, err
	}
	s, err := r.ToString()
	if err != nil {
		return nil, fmt.Errorf("INFO %s from %s: %w", section, addr, err)
	}
	return ParseInfo(s), nil
}

// ParseInfo reads the output of INFO as a field map (section headers and blank
// lines skipped).
func ParseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// FieldMaps reads a reply that is an array of flat field-value arrays
// (SENTINEL REPLICAS, SENTINEL SENTINELS) as one map per entry.
func FieldMaps(r valkey.ValkeyResult) ([]map[string]string, error) {
	arr, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, item := range arr {
		kv, err := item.AsStrSlice()
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		out = append(out, m)
	}
	return out, nil
}
