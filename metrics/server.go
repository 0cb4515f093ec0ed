package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is the /metrics endpoint of --metrics-addr.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// CheckAddr checks a HOST:PORT at flag time, before anything is listened on.
func CheckAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT (127.0.0.1:9464, :9464, or port 0 for any free one): %w", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q: %w", port, err)
	}
	return nil
}

// Listen binds addr (HOST:PORT; port 0 picks a free one) and serves the
// collector on /metrics in the background. A bad or busy address is an error
// here, before any run starts.
func Listen(addr string, c *Collector) (*Server, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", c.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "lockjepsen: metrics at /metrics")
	})
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	// Serve returns only when Close shuts the server down.
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the bound address (the real port when 0 was asked).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the scrape URL.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Close lets scrapes in flight finish (up to 2 s) and stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
