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
	return Read(f, path)
}

// Read parses JSON lines, validates every event and returns them sorted by time
// (ties by index). A truncated last line, the mark of a crashed writer, is
// dropped; any other bad line is an error that names it.
func Read(r io.Reader, name string) ([]Event, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var events []Event
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		line++
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if derr := dec.Decode(&e); derr != nil {
			if !complete {
				break // half-written last line of a crashed run
			}
			return nil, &ParseError{name, line, fmt.Errorf("not a valid event: %v", derr)}
		}
		if verr := Validate(&e); verr != nil {
			return nil, &ParseError{name, line, verr}
		}
		events = append(events, e)
		if !complete {
			break
		}
	}
	Sort(events)
	return events, nil
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

var (
	errNoF    = errors.New(`missing "f"`)
	errNoKey  = errors.New(`client lock operation without "key"`)
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
	if !e.IsClient() {
		return nil
	}
	switch e.F {
	case FAcquire, FExtend, FRelease:
		if e.Key == "" {
			return errNoKey
		}
		if e.Token == "" {
			return fmt.Errorf(`%s without "token"`, e.F)
		}
	case FRead, FWrite, FFence:
	default:
		return fmt.Errorf(`unknown client operation %q (want acquire, extend, release, read, write or fence)`, e.F)
	}
	return nil
}
