package workload

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/lock"
)

// A client whose first connections are reset tries again until its patience
// runs out, and then returns the network's error; a configuration error is
// returned at once (a fake server here: the test is of the client's retry,
// not of Valkey).
func TestOpenRetriesAReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.(*net.TCPConn).SetLinger(0) // close with a reset
			c.Close()
		}
	}()
	tests := []struct {
		name     string
		cfg      lock.Config
		retried  bool
		patience time.Duration
	}{
		{"reset by the server", lock.Config{Recipe: lock.Native, Service: endpoint.One(ln.Addr().String())}, true, 700 * time.Millisecond},
		{"a configuration error", lock.Config{Recipe: "no-such-recipe", Service: endpoint.One(ln.Addr().String())}, false, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accepted.Store(0)
			var log bytes.Buffer
			start := time.Now()
			_, err := openRetrying(tt.cfg, &log, tt.patience)
			took := time.Since(start)
			if err == nil {
				t.Fatal("opened a recipe on a server that resets every connection")
			}
			if tt.retried && (accepted.Load() < 3 || !transientNetErr(err)) {
				t.Errorf("%d connections in %v, last error %v (transient %v): want several tries", accepted.Load(), took, err, transientNetErr(err))
			}
			if !tt.retried && took > time.Second {
				t.Errorf("a configuration error took %v: it is not the network's", took)
			}
		})
	}
}
