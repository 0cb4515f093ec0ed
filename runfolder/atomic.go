package runfolder

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteAtomic writes path through write: into a temporary file beside it,
// flushed to disk, then renamed over path, so a reader (or a crash) sees the
// old file or the new one, never half of one. On any error the temporary file
// is removed and path is left as it was. The temporary file's name starts
// with '.' and ends in ".tmp", so folder listings can pass over it.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return writeAtomic(path, perm, true, write)
}

// Replace is WriteFileAtomic without the fsync: all or nothing for the
// processes reading the file now, but not made to survive a power cut. For
// files read by live processes that a crash makes moot anyway (a node's
// config, libfaketime's offset, which the clock-strobe fault flips every
// 200 ms, a service's address), where an fsync would only add latency.
func Replace(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, perm, false, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func writeAtomic(path string, perm os.FileMode, durable bool, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFileAtomic is os.WriteFile made atomic (see WriteAtomic).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteJSON writes v as indented JSON and a final newline, atomically, with
// mode 0644.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o644)
}

// ReadJSON decodes the JSON file at path into v. A missing file is an error
// that wraps os.ErrNotExist; a file that does not decode is "PATH is corrupt".
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return nil
}

// HoldsRun reports whether dir already holds a run (a history or a
// verdict), which nothing may overwrite unasked.
func HoldsRun(dir string) bool {
	for _, name := range []string{History, Results} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil || !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// CanCreate says whether the folder dir exists or can be made, by making
// it and removing again what it made: a command asks before it starts
// anything, so that an --out no one can create is refused up front, not
// once a run is under way, and a refused command leaves no folder behind.
func CanCreate(dir string) error {
	if dir == "" {
		return errors.New("empty: name a folder")
	}
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is a file, not a folder", dir)
		}
		return nil
	}
	// The folders MkdirAll makes are those from the first missing one down.
	var made []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	err := os.MkdirAll(dir, 0o755)
	for _, d := range made { // deepest first; those a failure left undone are not there
		os.Remove(d)
	}
	return err
}
