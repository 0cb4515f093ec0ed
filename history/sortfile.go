package history

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// SortFile rewrites a history file sorted as ReadFile returns it (true time,
// ties by index), every event's index set to its position: the bytes
// WriteFile writes for ReadFile's events, index renumbered. A file ReadFile
// refuses is left as it is and the error returned.
//
// It holds 32 bytes per event (time, index, where its line lies) instead of
// the events, and reads each line back from the file to write it: the runner
// sorts its arrival-ordered history with it at the end of every run. Holding
// the events (ReadFile, then WriteFile) took 408 MB of heap for 1.37M events
// and set the garbage collector's goal for the check that follows: a
// 9M-event run peaked at 5.3 GiB where `lockjepsen check` of its folder
// peaks at 1.38 GiB.
func SortFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	type line struct {
		time, index, off int64
		n                int
	}
	capacity := 0
	if st, err := f.Stat(); err == nil {
		capacity = int(st.Size() / 150) // lines run 150-250 bytes
	}
	lines := make([]line, 0, capacity)
	err = scan(f, path, func(e *Event, off int64, n int) error {
		lines = append(lines, line{e.Time, e.Index, off, n})
		return nil
	})
	if err != nil {
		return err
	}
	// Sort's order: time, then index, then (its stability) file order,
	// which is the order of the offsets.
	slices.SortFunc(lines, func(a, b line) int {
		if c := cmp.Compare(a.time, b.time); c != 0 {
			return c
		}
		if c := cmp.Compare(a.index, b.index); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	return runfolder.WriteAtomic(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 256<<10)
		rd := &window{f: f, buf: make([]byte, sortWindow)}
		var out []byte
		for i, l := range lines {
			b, err := rd.line(l.off, l.n)
			if err != nil {
				return fmt.Errorf("read back %s: %w", path, err)
			}
			// Scan accepted the line; Unmarshal decodes it the same way.
			var e Event
			if err := Unmarshal(bytes.TrimSpace(b), &e); err != nil {
				return fmt.Errorf("read back %s at byte %d: %w", path, l.off, err)
			}
			e.Index = int64(i)
			out = append(AppendJSON(out[:0], &e), '\n')
			if _, err := bw.Write(out); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

// sortWindow is how much of the file SortFile reads at a time. The sorted
// order runs through an arrival-ordered file nearly front to back: a line
// that arrived late lies a little ahead of its neighbours in time, so the
// window keeps a quarter of itself behind the line it was read for.
const sortWindow = 1 << 20

// window reads lines of a file by offset through one buffer.
type window struct {
	f    *os.File
	buf  []byte
	base int64 // file offset of buf[0]
	n    int   // bytes of buf read
}

// line returns the n bytes at off, valid until the next call.
func (w *window) line(off int64, n int) ([]byte, error) {
	if off < w.base || off+int64(n) > w.base+int64(w.n) {
		if 2*n > len(w.buf) {
			w.buf = make([]byte, 2*n)
		}
		start := max(0, off-int64(len(w.buf)/4))
		k, err := w.f.ReadAt(w.buf, start)
		if k < int(off-start)+n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		w.base, w.n = start, k
	}
	return w.buf[off-w.base : off-w.base+int64(n)], nil
}
