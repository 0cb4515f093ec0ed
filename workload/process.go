package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// StartOptions tune how a client process is started.
type StartOptions struct {
	Args   []string  // arguments after the executable; default: ["client"]
	Stderr io.Writer // the client's diagnostics; default: os.Stderr
	Env    []string  // added to the environment
	// OnEvent, when set, takes each event in the goroutine that reads the
	// client's pipe, in the order the client wrote them, and Events only
	// closes when the client is done: one goroutine hand-off (a channel
	// send and a wake-up) fewer an event than a pump draining Events.
	// It must not block long: the client blocks when its pipe is full.
	OnEvent func(history.Event)
}

// Client is a running client process as the runner sees it.
type Client struct {
	cmd     *exec.Cmd
	slot    int
	events  chan history.Event
	onEvent func(history.Event)

	mu    sync.Mutex // stdin writes
	stdin io.WriteCloser

	done    chan struct{}
	waitErr error
	badMu   sync.Mutex
	bad     []error // lines that were not valid events
	tail    *tailWriter
}

// tailWriter passes a client's stderr on and keeps its last line, so that a
// client that exits with an error can be named with its reason.
type tailWriter struct {
	w    io.Writer
	mu   sync.Mutex
	last []byte // last complete non-empty line
	cur  []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	for _, b := range p {
		if b == '\n' {
			if len(t.cur) > 0 {
				t.last = append(t.last[:0], t.cur...)
			}
			t.cur = t.cur[:0]
		} else if len(t.cur) < 4096 {
			t.cur = append(t.cur, b)
		}
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tailWriter) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.cur) > 0 {
		return string(t.cur)
	}
	return string(t.last)
}

// StartClient starts `exe client` with cfg as its first stdin line. The
// process dies with the runner (parent-death signal) and gets its own process
// group, so a terminal's Ctrl-C reaches the runner, which decides. The runner
// must drain Events: a client blocks when its stdout pipe is full.
func StartClient(ctx context.Context, exe string, cfg ClientConfig) (*Client, error) {
	return StartClientWith(ctx, exe, cfg, StartOptions{})
}

// StartClientWith is StartClient with options.
func StartClientWith(ctx context.Context, exe string, cfg ClientConfig, o StartOptions) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	line, err := json.Marshal(&cfg)
	if err != nil {
		return nil, fmt.Errorf("encode client config: %w", err)
	}
	args := o.Args
	if args == nil {
		args = []string{"client"}
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), o.Env...)
	tail := &tailWriter{w: o.Stderr}
	if tail.w == nil {
		tail.w = os.Stderr
	}
	cmd.Stderr = tail
	// A SIGSTOPped client cannot exit on cancel; SIGKILL works on it anyway.
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("client %d stdin: %w", cfg.Slot, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("client %d stdout: %w", cfg.Slot, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start client %d (%s): %w", cfg.Slot, exe, err)
	}
	c := &Client{cmd: cmd, slot: cfg.Slot, events: make(chan history.Event, 256), onEvent: o.OnEvent, stdin: stdin, done: make(chan struct{}), tail: tail}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("send config to client %d: %w", cfg.Slot, err)
	}
	go c.read(stdout)
	return c, nil
}

// read forwards events until the client closes stdout, then reaps it.
func (c *Client) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		// The line in place in the buffer: the event's strings are copies,
		// so the buffer may move on.
		b, err := history.ReadLine(br)
		if len(b) > 0 && err == nil {
			var e history.Event
			if jerr := history.Unmarshal(b, &e); jerr != nil {
				c.noteBad(fmt.Errorf("client %d sent a line that is not an event: %v", c.slot, jerr))
			} else if verr := history.Validate(&e); verr != nil {
				c.noteBad(fmt.Errorf("client %d sent an invalid event: %v", c.slot, verr))
			} else if c.onEvent != nil {
				c.onEvent(e)
			} else {
				c.events <- e
			}
		}
		if err != nil {
			break // EOF; a torn last line of a killed client is dropped
		}
	}
	close(c.events)
	c.waitErr = c.cmd.Wait()
	close(c.done)
}

func (c *Client) noteBad(err error) {
	c.badMu.Lock()
	c.bad = append(c.bad, err)
	c.badMu.Unlock()
}

// PID is the OS process id (what the nemesis SIGSTOPs).
func (c *Client) PID() int { return c.cmd.Process.Pid }

// Slot is the client's slot.
func (c *Client) Slot() int { return c.slot }

// Events delivers the client's events in the order it wrote them (none when
// StartOptions.OnEvent takes them); it is closed when the client exits.
func (c *Client) Events() <-chan history.Event { return c.events }

func (c *Client) send(line []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stdin == nil {
		return fmt.Errorf("client %d: already stopped", c.slot)
	}
	if _, err := c.stdin.Write(line); err != nil {
		return fmt.Errorf("client %d control: %w", c.slot, err)
	}
	return nil
}

// SetClock skews the client's decision clock: offset from true time, and
// rate (1 = true speed). Takes effect when the client reads it; a
// SIGSTOPped client reads it when continued.
func (c *Client) SetClock(offset time.Duration, rate float64) error {
	line, err := clockLine(offset, rate)
	if err != nil {
		return err
	}
	return c.send(line)
}

// Stop asks the client to finish its current cycle (releasing its lock) and
// exit. It does not wait; call Wait.
func (c *Client) Stop() error {
	err := c.send([]byte(`{"stop":true}` + "\n"))
	c.mu.Lock()
	if c.stdin != nil {
		c.stdin.Close()
		c.stdin = nil
	}
	c.mu.Unlock()
	return err
}

// Kill ends the client at once (SIGKILL), continuing it first is not needed.
func (c *Client) Kill() error {
	if err := c.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill client %d: %w", c.slot, err)
	}
	return nil
}

// Wait waits for the client to exit (Events must be drained) and returns its
// exit error, or the first malformed line it sent.
func (c *Client) Wait() error {
	<-c.done
	if c.waitErr != nil {
		if last := strings.TrimPrefix(c.tail.lastLine(), "lockjepsen: client: "); last != "" {
			return fmt.Errorf("client %d (%w): %s", c.slot, c.waitErr, last)
		}
		return fmt.Errorf("client %d: %w", c.slot, c.waitErr)
	}
	c.badMu.Lock()
	defer c.badMu.Unlock()
	if len(c.bad) > 0 {
		return c.bad[0]
	}
	return nil
}

// Done is closed when the client has exited.
func (c *Client) Done() <-chan struct{} { return c.done }
