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

// ReadAttemptsFile reads the resource's log (resource.jsonl). A missing file
// is not an error: runs without a fenced resource have none. As with the
// history, a half-written last line is dropped and any other bad line is an
// error naming it.
func ReadAttemptsFile(path string) ([]history.Attempt, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open resource log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var out []history.Attempt
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return out, nil
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var a history.Attempt
		if derr := json.Unmarshal(b, &a); derr != nil {
			if err == io.EOF {
				return out, nil // half-written last line of a crashed run
			}
			return nil, &history.ParseError{Path: path, Line: line, Err: fmt.Errorf("not a valid attempt: %v", derr)}
		}
		if a.Op != history.FRead && a.Op != history.FWrite {
			return nil, &history.ParseError{Path: path, Line: line, Err: fmt.Errorf(`"op" must be read or write, got %q`, a.Op)}
		}
		out = append(out, a)
		if err == io.EOF {
			return out, nil
		}
	}
}
