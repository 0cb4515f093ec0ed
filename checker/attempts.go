package checker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lockjepsen/lockjepsen/history"
)

// IndexAttemptsFile reads the resource's log straight into the index the
// checker consults (nil when the file is missing or empty), without holding
// its lines.
func IndexAttemptsFile(path string) (*AttemptIndex, error) {
	var idx *AttemptIndex
	err := ScanAttemptsFile(path, func(a *history.Attempt) {
		if idx == nil {
			idx = NewAttemptIndex()
		}
		idx.Add(a)
	})
	if err != nil {
		return nil, err
	}
	return idx, nil
}

// ScanAttemptsFile calls fn for every line of the resource's log, in file
// order. A missing file is not an error: runs without a fenced resource have
// none. As with the history, a half-written last line is dropped and any
// other bad line is an error naming it.
func ScanAttemptsFile(path string, fn func(*history.Attempt)) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open resource log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s: %w", path, err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var a history.Attempt
		if derr := json.Unmarshal(b, &a); derr != nil {
			if err == io.EOF {
				return nil // half-written last line of a crashed run
			}
			return &history.ParseError{Path: path, Line: line, Err: fmt.Errorf("not a valid attempt: %v", derr)}
		}
		if a.Op != history.FRead && a.Op != history.FWrite {
			return &history.ParseError{Path: path, Line: line, Err: fmt.Errorf(`"op" must be read or write, got %q`, a.Op)}
		}
		fn(&a)
		if err == io.EOF {
			return nil
		}
	}
}
