package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
)

// ParseError names the line of a history that could not be read and why.
type ParseError struct {
	Path string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ReadFile reads and validates a history file; see Read.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	// Size the slice once: growing it by append to a million events copied
	// it over and over (1.2 GB allocated for 244 MB kept, and a peak RSS of
	// 1.5 GiB for `check` on 1M events). Lines run 150-250 bytes.
	capacity := 0
	if st, err := f.Stat(); err == nil {
		capacity = int(st.Size() / 150)
	}
	return read(f, path, capacity)
}

// Read parses JSON lines, validates every event and the rules that tie events
// together (see Scan), and returns them sorted by time (ties by index). A
// truncated last line, the mark of a crashed writer, is dropped; any other bad
// line is an error that names it.
func Read(r io.Reader, name string) ([]Event, error) { return read(r, name, 0) }

func read(r io.Reader, name string, capacity int) ([]Event, error) {
	events := make([]Event, 0, capacity)
	err := Scan(r, name, func(e *Event) error {
		events = append(events, *e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	Sort(events)
	return events, nil
}

// Scan reads JSON lines in file order and calls fn for every valid event, so
// that a large history can be judged without holding it. Before fn sees an
// event, Scan checks it against the schema (Validate) and against the earlier
// lines of its process: a process's time never goes backwards, it has at most
// one operation in flight, and a completion answers its invoke (same f, key,
// token and ttl_ms, stamped no earlier). A violation is a *ParseError naming
// the line. A truncated last line is dropped. fn must not keep e.
//
// Lines are read and decoded on another goroutine, a batch at a time, while
// this one validates them and calls fn, in file order: decoding was half of
// the 24 s a 10M-event check spent reading its history on one core.
func Scan(r io.Reader, name string, fn func(*Event) error) error {
	return scan(r, name, func(e *Event, _ int64, _ int) error { return fn(e) })
}

// scan is Scan that also hands fn where the event's line lies in r: its
// first byte's offset and its length (the newline and any blanks around the
// JSON included), for SortFile, which reads the lines back.
func scan(r io.Reader, name string, fn func(e *Event, off int64, n int) error) error {
	done := make(chan struct{})
	defer close(done)
	batches, free := make(chan []scanned, 4), make(chan []scanned, 6)
	go decodeLines(r, name, batches, free, done)
	v := newLineValidator()
	for batch := range batches {
		for i := range batch {
			l := &batch[i]
			switch {
			case l.err != nil:
				return l.err
			case l.end:
				return nil
			case l.derr != nil:
				return &ParseError{name, l.line, fmt.Errorf("not a valid event: %v", l.derr)}
			}
			if verr := Validate(&l.e); verr != nil {
				return &ParseError{name, l.line, verr}
			}
			if verr := v.check(&l.e, l.line); verr != nil {
				return &ParseError{name, l.line, verr}
			}
			if ferr := fn(&l.e, l.off, l.n); ferr != nil {
				return ferr
			}
		}
		select {
		case free <- batch[:0]:
		default:
		}
	}
	return nil
}

// ReadLine reads up to and including the next newline: in place in br's
// buffer (valid until the next read) where it fits, gathered into a copy
// where it is longer. It does not allocate for a line that fits, as
// ReadBytes does for every line.
func ReadLine(br *bufio.Reader) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return b, err
	}
	long := append([]byte(nil), b...)
	for err == bufio.ErrBufferFull {
		b, err = br.ReadSlice('\n')
		long = append(long, b...)
	}
	return long, err
}

// scanned is one line as decodeLines leaves it: an event, a line that is
// not one (derr), the end of the history (end: EOF, or a half-written last
// line), or a read error.
type scanned struct {
	e    Event
	line int
	off  int64 // where the line starts in the input
	n    int   // its length, newline included
	derr error
	end  bool
	err  error
}

const scanBatch = 512

// decodeLines reads and decodes lines into batches until the end, a read
// error or done.
func decodeLines(r io.Reader, name string, batches chan<- []scanned, free <-chan []scanned, done <-chan struct{}) {
	defer close(batches)
	br := bufio.NewReaderSize(r, 256<<10)
	in := make(interner, internMax)
	line := 0
	var off int64 // where the next line starts
	var batch []scanned
	send := func() bool {
		select {
		case batches <- batch:
		case <-done:
			return false
		}
		select {
		case batch = <-free:
		default:
			batch = make([]scanned, 0, scanBatch)
		}
		return true
	}
	batch = make([]scanned, 0, scanBatch)
	for {
		b, err := ReadLine(br)
		if len(b) == 0 && err == io.EOF {
			batch = append(batch, scanned{end: true})
			send()
			return
		}
		if err != nil && err != io.EOF {
			batch = append(batch, scanned{err: fmt.Errorf("read %s: %w", name, err)})
			send()
			return
		}
		line++
		start, n := off, len(b)
		off += int64(n)
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if !complete {
				batch = append(batch, scanned{end: true})
				send()
				return
			}
			continue
		}
		batch = append(batch, scanned{line: line, off: start, n: n})
		l := &batch[len(batch)-1]
		if decodeFast(b, &l.e, &in) != nil {
			// encoding/json knows every form JSON allows and words the error.
			l.e = Event{}
			if derr := decodeEvent(b, &l.e); derr != nil {
				if !complete {
					l.end = true // half-written last line of a crashed run
				} else {
					l.derr = derr
				}
			}
		}
		if !complete {
			if !l.end {
				batch = append(batch, scanned{end: true})
			}
			send()
			return
		}
		if len(batch) == scanBatch && !send() {
			return
		}
	}
}

func decodeEvent(b []byte, e *Event) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(e); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// Sort orders events by true time, ties broken by index.
func Sort(events []Event) {
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].Time != events[j].Time {
			return events[i].Time < events[j].Time
		}
		return events[i].Index < events[j].Index
	})
}

// Bounds that keep every sum the checker forms (time + ttl + tolerance) far
// from int64 overflow and from its "never" (the largest int64).
const (
	// MaxTime is the largest accepted "time": 2^61 ns, 73 years of uptime.
	MaxTime = int64(1) << 61
	// MaxTTLMs is the largest accepted "ttl_ms": 2^61 ns in milliseconds.
	MaxTTLMs = MaxTime / 1e6
)

var (
	errNoF    = errors.New(`missing "f"`)
	errNoKey  = errors.New(`client operation without "key"`)
	errNoTime = errors.New(`"time" must be positive (CLOCK_MONOTONIC ns)`)
)

// Validate checks one event's fields against the schema.
func Validate(e *Event) error {
	switch e.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fmt.Errorf(`"type" must be invoke, ok, fail or info, got %q`, e.Type)
	}
	if e.F == "" {
		return errNoF
	}
	if e.Time <= 0 {
		return errNoTime
	}
	if e.Time > MaxTime {
		return fmt.Errorf(`"time" %d is beyond CLOCK_MONOTONIC's range (at most 2^61 ns, 73 years)`, e.Time)
	}
	if !e.IsClient() {
		if e.Type != Info {
			return fmt.Errorf(`nemesis events have "type" info, got %q`, e.Type)
		}
		return nil
	}
	switch e.F {
	case FAcquire, FExtend, FRelease, FRead, FWrite, FFence:
	default:
		return fmt.Errorf(`unknown client operation %q (want acquire, extend, release, read, write or fence)`, e.F)
	}
	if e.Key == "" {
		return errNoKey
	}
	if e.Token == "" {
		return fmt.Errorf(`%s without "token"`, e.F)
	}
	switch {
	case e.TTLMs < 0:
		return fmt.Errorf(`%s with a negative "ttl_ms" (%d)`, e.F, e.TTLMs)
	case e.TTLMs > MaxTTLMs:
		return fmt.Errorf(`%s "ttl_ms" %d overflows when turned into nanoseconds (at most %d ms)`, e.F, e.TTLMs, MaxTTLMs)
	case e.TTLMs == 0 && e.Type == Invoke && (e.F == FAcquire || e.F == FExtend):
		return fmt.Errorf(`%s invoke without "ttl_ms" (the lease asked for, > 0)`, e.F)
	}
	if e.Verdict != "" && e.Verdict != Accepted && e.Verdict != Rejected {
		return fmt.Errorf(`"verdict" must be accepted or rejected, got %q`, e.Verdict)
	}
	switch {
	case e.Expiry != "" && e.Expiry != ExpiryNone:
		return fmt.Errorf(`"expiry" must be %q or absent, got %q`, ExpiryNone, e.Expiry)
	case e.Expiry != "" && e.F != FAcquire && e.F != FExtend:
		return fmt.Errorf(`%s with "expiry": only an acquire or an extend asks for a lease`, e.F)
	}
	switch {
	case e.Reply != "" && e.Reply != ReplyCancel && e.Reply != ReplyDrop:
		return fmt.Errorf(`"reply" must be %q, %q or absent, got %q`, ReplyCancel, ReplyDrop, e.Reply)
	case e.Reply != "" && (e.Type == Invoke || e.F != FAcquire && e.F != FRelease && e.F != FExtend):
		return fmt.Errorf(`%s %s with "reply": only an acquire's, an extend's or a release's completion is reached by a reply fault`, e.Type, e.F)
	}
	return nil
}

// lineValidator holds what each process did last, to check the rules that
// span lines.
type lineValidator struct {
	procs map[Process]*procState
}

type procState struct {
	time     int64 // latest time seen
	timeLine int
	inflight bool
	inv      Event // the invoke in flight
	invLine  int
}

func newLineValidator() *lineValidator { return &lineValidator{procs: make(map[Process]*procState)} }

func msStr(t int64) string { return strconv.FormatFloat(float64(t)/1e6, 'f', -1, 64) + " ms" }

func (v *lineValidator) check(e *Event, line int) error {
	if !e.IsClient() {
		return nil
	}
	p := v.procs[e.Process]
	if p == nil {
		p = &procState{}
		v.procs[e.Process] = p
	}
	if e.Type == Invoke {
		if p.inflight {
			return fmt.Errorf("process %d invokes %s while its %s (line %d) has not completed; a process may have one operation in flight",
				e.Process, e.F, p.inv.F, p.invLine)
		}
	} else {
		if !p.inflight {
			return fmt.Errorf("%s %s on process %d without a preceding invoke", e.Type, e.F, e.Process)
		}
		inv := &p.inv
		switch {
		case e.F != inv.F:
			return fmt.Errorf("%s %s completes process %d's %s (line %d)", e.Type, e.F, e.Process, inv.F, p.invLine)
		case e.Time < inv.Time:
			return fmt.Errorf("completion stamped before its invoke (%s, invoked at %s on line %d)", msStr(e.Time), msStr(inv.Time), p.invLine)
		case e.Token != inv.Token:
			return fmt.Errorf("completion's token %q differs from its invoke's %q (line %d)", e.Token, inv.Token, p.invLine)
		case e.Key != inv.Key:
			return fmt.Errorf("completion's key %q differs from its invoke's %q (line %d)", e.Key, inv.Key, p.invLine)
		case e.TTLMs != 0 && e.TTLMs != inv.TTLMs:
			return fmt.Errorf("completion's ttl_ms %d differs from its invoke's %d (line %d)", e.TTLMs, inv.TTLMs, p.invLine)
		}
	}
	if p.timeLine > 0 && e.Time < p.time {
		return fmt.Errorf("process %d's time goes backwards (%s after %s on line %d)", e.Process, msStr(e.Time), msStr(p.time), p.timeLine)
	}
	p.time, p.timeLine = e.Time, line
	if e.Type == Invoke {
		p.inflight, p.inv, p.invLine = true, *e, line
		p.inv.Error, p.inv.Value = "", nil
	} else {
		p.inflight = false
	}
	return nil
}
