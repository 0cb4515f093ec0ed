package history

import (
	"io"

	"bufio"
	"encoding/json"
	"fmt"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"os"
	"sync"
)

// Writer appends events to a JSON-lines file as they arrive, assigning indexes in
// arrival order. It flushes after every event so that a crash of the runner leaves
// a readable prefix on disk; Reader sorts by time, so arrival order is enough.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	bw   *bufio.Writer
	next int64
	buf  []byte // the line being written, reused
	// sync flushes to the OS after every event (crash safety); benchmarks and
	// offline rewrites turn it off.
	sync bool
}

// Create opens path for writing (truncating it).
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create history %s: %w", path, err)
	}
	return &Writer{f: f, bw: bufio.NewWriterSize(f, 64<<10), sync: true}, nil
}

// SetFlushEach sets whether every event is flushed to the OS as it is written.
func (w *Writer) SetFlushEach(on bool) { w.mu.Lock(); w.sync = on; w.mu.Unlock() }

// Write assigns e the next index and appends it.
func (w *Writer) Write(e Event) (Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.Index = w.next
	w.next++
	w.buf = append(AppendJSON(w.buf[:0], &e), '\n')
	if _, err := w.bw.Write(w.buf); err != nil {
		return e, fmt.Errorf("write history: %w", err)
	}
	if w.sync {
		if err := w.bw.Flush(); err != nil {
			return e, fmt.Errorf("flush history: %w", err)
		}
	}
	return e, nil
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.bw.Flush(); err != nil {
		w.f.Close()
		return fmt.Errorf("flush history: %w", err)
	}
	return w.f.Close()
}

// WriteFile writes events, already indexed, to path atomically (temp file,
// fsync and rename), so a reader never sees a half-rewritten history.
func WriteFile(path string, events []Event) error { return writeLines(path, events, "event") }

// WriteAttemptsFile writes a resource log (resource.jsonl) the same way:
// for runs put together from another's lines (lockjepsen shrink) and for
// generated ones.
func WriteAttemptsFile(path string, attempts []Attempt) error {
	return writeLines(path, attempts, "attempt")
}

// writeLines writes one JSON line per item, atomically.
func writeLines[T any](path string, items []T, what string) error {
	return runfolder.WriteAtomic(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 256<<10)
		enc := json.NewEncoder(bw)
		for i := range items {
			if err := enc.Encode(&items[i]); err != nil {
				return fmt.Errorf("encode %s %d: %w", what, i, err)
			}
		}
		return bw.Flush()
	})
}
