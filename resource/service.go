package resource

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Service is a Store served over HTTP on a listener: what `lockjepsen resource
// serve` runs, and what tests start in-process.
type Service struct {
	Store *Store
	ln    net.Listener
	srv   *http.Server
	done  chan error
}

// Start opens the store and serves it on addr (host:port; port 0 picks one).
func Start(ctx context.Context, cfg Config, addr string) (*Service, error) {
	st, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("resource: listen on %s: %w", addr, err)
	}
	s := &Service{
		Store: st,
		ln:    ln,
		srv:   &http.Server{Handler: NewServer(st).Handler(), ReadHeaderTimeout: 10 * time.Second},
		done:  make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the bound address, 127.0.0.1:PORT.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// Done yields the serve loop's error if it stops without Close.
func (s *Service) Done() <-chan error { return s.done }

// Close lets requests in flight finish (they are short), then closes the store.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if cerr := s.Store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("resource: stop service: %w", err)
	}
	return nil
}

// WriteReadyFile writes addr to path atomically (temp file and rename), so a
// runner polling for the file never reads half an address.
func WriteReadyFile(path, addr string) error {
	if err := runfolder.Replace(path, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("resource: ready file: %w", err)
	}
	return nil
}
