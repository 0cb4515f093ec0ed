package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/valkey-io/valkey-go"
)

// Memory as a managed cache configures it: maxmemory and a policy on every
// node (Valkey's "Key eviction" docs). A volatile-* policy evicts only keys
// with an expire set, and every lock key has one; volatile-ttl evicts the
// shortest remaining TTL first, which in a cache whose entries live for
// minutes is the locks. An evicted key's DEL replicates, so the replicas
// lose it too, and a lock is granted again with no failover at all.

// MinMaxMemory is the least --maxmemory accepted: an idle Valkey 9 primary
// with its replication backlog and a few dozen clients uses about 1.5 MB
// (INFO memory used_memory), and below that every write, the locks' too,
// is refused or evicted at once.
const MinMaxMemory = 4 << 20

func (c *Config) validateMaxMemory() error {
	if c.MaxMemoryPolicy != "" {
		if err := knob.OneOf("maxmemory-policy", c.MaxMemoryPolicy, knob.MaxMemoryPolicies); err != nil {
			return err
		}
		if c.MaxMemory == 0 {
			return fmt.Errorf("--maxmemory-policy %s without --maxmemory: a policy acts only at a memory limit; add --maxmemory, e.g. 16mb", c.MaxMemoryPolicy)
		}
	}
	if c.MaxMemory != 0 && c.MaxMemory < MinMaxMemory {
		return fmt.Errorf("--maxmemory %d bytes: want at least %d (4mb): an idle primary with its replication backlog uses about 1.5 MB, so below that the locks' own writes are refused or evicted", c.MaxMemory, MinMaxMemory)
	}
	return nil
}

// maxMemoryConf is the config lines of the memory knobs; with a limit, the
// nodes also publish evictions as keyspace events (notify-keyspace-events
// Ee: __keyevent@0__:evicted), so a fault can say which lock keys went.
func maxMemoryConf(c *Config) string {
	if c.MaxMemory == 0 {
		return ""
	}
	policy := c.MaxMemoryPolicy
	if policy == "" {
		policy = "noeviction" // Valkey's default
	}
	return fmt.Sprintf("maxmemory %d\nmaxmemory-policy %s\nnotify-keyspace-events Ee\n", c.MaxMemory, policy)
}

// Loader is a runtime that can run valkey-benchmark against a node: the
// cache workload of the memory-pressure fault is that real process, writing
// as a shared cache's clients would.
type Loader interface {
	Load(ctx context.Context, node string, args ...string) (string, error)
}

// Watcher is a runtime that can subscribe to a node's channel (keyspace
// events) until ctx ends, handing each message to fn.
type Watcher interface {
	Watch(ctx context.Context, node, channel string, fn func(msg string)) error
}

// CacheHost is a runtime that can start a cache instance beside the
// deployment: one more Valkey server with the run's maxmemory settings that
// no Sentinel watches, no replica follows and no lock client uses. It is the
// article's "dedicated lock instance" seen from the other side: the cache's
// burst lands there, and the lock's nodes are left alone.
type CacheHost interface {
	// Cache starts the instance on its first call and returns its node name
	// (Load, Watch and Command take it); it stops with Down.
	Cache(ctx context.Context) (string, error)
}

// CacheNode is the cache instance's name.
const CacheNode = "cache-0"

var (
	_ Loader    = (*Local)(nil)
	_ Watcher   = (*Local)(nil)
	_ CacheHost = (*Local)(nil)
)

// Cache starts cache-0 in the run directory: a standalone server with the
// memory knobs and nothing else (no min-replicas: it has no replica).
func (l *Local) Cache(ctx context.Context) (string, error) {
	l.mu.Lock()
	started := l.cache != nil
	l.mu.Unlock()
	if started {
		return CacheNode, nil
	}
	ports, err := allocatePorts(0, 1)
	if err != nil {
		return "", err
	}
	n := Node{Name: CacheNode, Kind: RolePrimary, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	n.Dir = filepath.Join(l.cfg.Dir, n.Name)
	n.LogFile = filepath.Join(n.Dir, n.Name+".log")
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\nlogfile %s\npidfile \"\"\ndaemonize no\nsave \"\"\n%s",
		ports[0], n.Dir, n.LogFile, maxMemoryConf(&l.cfg))
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return "", fmt.Errorf("cache instance: %w", err)
	}
	if err := writeFile(filepath.Join(n.Dir, "node.conf"), conf); err != nil {
		return "", err
	}
	p, err := spawn(l.bins.Server, []string{filepath.Join(n.Dir, "node.conf")}, nil, filepath.Join(n.Dir, "stdout.log"), l.cfg.Detached)
	if err != nil {
		return "", fmt.Errorf("start the cache instance: %w", err)
	}
	n.PID = p.PID()
	l.mu.Lock()
	l.cache = &n
	l.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if _, err := l.adm.do(wctx, n.Addr, "PING"); err == nil {
			return CacheNode, nil
		}
		select {
		case <-wctx.Done():
			return "", fmt.Errorf("the cache instance (%s) did not answer PING within 10 s; see %s", n.Addr, n.LogFile)
		case <-time.After(PollEvery):
		}
	}
}

// stopCache ends the cache instance, if one was started.
func (l *Local) stopCache() error {
	l.mu.Lock()
	n := l.cache
	l.cache = nil
	l.mu.Unlock()
	if n == nil {
		return nil
	}
	_ = signalPID(n.PID, syscall.SIGKILL)
	if !WaitGone(n.PID, 5*time.Second) {
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", n.Name, n.PID)
	}
	return nil
}

// Load runs valkey-benchmark against the node with args and returns what it
// printed.
func (l *Local) Load(ctx context.Context, node string, args ...string) (string, error) {
	n, err := l.MustNode(node)
	if err != nil {
		return "", err
	}
	if l.bins.Benchmark == "" {
		return "", fmt.Errorf("no valkey-benchmark beside valkey-server: run 'make setup'")
	}
	host, port, _ := strings.Cut(n.Addr, ":")
	cmd := exec.CommandContext(ctx, l.bins.Benchmark, append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() == nil {
		return string(out), fmt.Errorf("valkey-benchmark on %s: %w: %s", node, err, lastLine(string(out)))
	}
	return string(out), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Watch subscribes on a connection of its own and blocks until ctx ends.
func (l *Local) Watch(ctx context.Context, node, channel string, fn func(string)) error {
	n, err := l.MustNode(node)
	if err != nil {
		return err
	}
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{n.Addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", node, err)
	}
	defer c.Close()
	err = c.Receive(ctx, c.B().Subscribe().Channel(channel).Build(), func(m valkey.PubSubMessage) { fn(m.Message) })
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// InfoField reads one field of a node's INFO section (e.g. stats
// evicted_keys) as an integer.
func InfoField(ctx context.Context, rt Runtime, node, section, field string) (int64, error) {
	out, err := rt.Command(ctx, node, "INFO", section)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO %s on %s has no %s", section, node, field)
}
