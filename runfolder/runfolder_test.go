package runfolder

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The names are part of the run folder's contract: docs, the workshop's
// "open" lists and links in index.html depend on them.
func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{PorcupinePage(PageLock, "lock:{job-1}"), "porcupine-lock-job-1.html"},
		{PorcupinePage(PageResource, "job-1"), "porcupine-resource-job-1.html"},
		{PorcupinePage(PageResource, "lock:{job-1}"), "porcupine-resource-job-1.html"},
		{PorcupinePage(PageLock, "lock:{job-1}-2"), "porcupine-lock-job-1-2.html"},
		{PorcupinePage(PageLock, "a b//c"), "porcupine-lock-a-b-c.html"},
		{PorcupinePage(PageLock, "{}"), "porcupine-lock-key.html"},
		{ClientLog(3), "clients/client-3.log"},
		{TimelinePNG, "timeline.png"},
		{TimelineSVG, "timeline.svg"},
		{NewDir(Root, time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), "failover-race"), "results/20260102-150405-failover-race"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestWriteAtomic(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		old     string // "" : no file before
		write   func(io.Writer) error
		wantErr bool
		want    string // content after
	}{
		{"new file", "", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, false, "new"},
		{"replaces", "old", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, false, "new"},
		{"error keeps the old file", "old", func(w io.Writer) error { io.WriteString(w, "half"); return boom }, true, "old"},
		{"error leaves no file", "", func(w io.Writer) error { return boom }, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, Results)
			if tt.old != "" {
				os.WriteFile(path, []byte(tt.old), 0o644)
			}
			err := WriteAtomic(path, 0o600, tt.write)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr && (!errors.Is(err, boom) || !strings.Contains(err.Error(), path)) {
				t.Errorf("error %v does not wrap the cause and name %s", err, path)
			}
			b, rerr := os.ReadFile(path)
			if string(b) != tt.want || (tt.want == "" && !errors.Is(rerr, os.ErrNotExist)) {
				t.Errorf("content %q (%v), want %q", b, rerr, tt.want)
			}
			if !tt.wantErr {
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
					t.Errorf("mode %v, want 0600", st.Mode().Perm())
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != Results {
					t.Errorf("left behind %s", e.Name())
				}
			}
		})
	}
}

func TestWriteAtomicIntoMissingFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", Config)
	if err := WriteFileAtomic(path, []byte("{}"), 0o644); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err %v, want one naming %s", err, path)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, Config)
	type cfg struct{ Seed int }
	if err := WriteJSON(path, cfg{7}); err != nil {
		t.Fatal(err)
	}
	var got cfg
	if err := ReadJSON(path, &got); err != nil || got.Seed != 7 {
		t.Fatalf("read %+v, %v", got, err)
	}
	if b, _ := os.ReadFile(path); !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("no final newline: %q", b)
	}
	if err := WriteJSON(path, func() {}); err == nil {
		t.Error("encoding a func succeeded")
	}
	if err := ReadJSON(filepath.Join(dir, Results), &got); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	os.WriteFile(path, []byte("{"), 0o644)
	if err := ReadJSON(path, &got); err == nil || !strings.Contains(err.Error(), path+" is corrupt") {
		t.Errorf("corrupt file: %v", err)
	}
}

func TestHoldsRun(t *testing.T) {
	for _, name := range []string{"", History, Results, Config} {
		dir := t.TempDir()
		if name != "" {
			os.WriteFile(filepath.Join(dir, name), nil, 0o644)
		}
		want := name == History || name == Results
		if got := HoldsRun(dir); got != want {
			t.Errorf("with %q: HoldsRun %v, want %v", name, got, want)
		}
	}
}

func TestUpdateLatest(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, Root)
	os.MkdirAll(filepath.Join(root, "workshop"), 0o755)
	tests := []struct {
		name string
		root string // as given
		dir  string
		want string // link target in root, "" : no link
	}{
		{"inside the root", root, filepath.Join(root, "20260102-150405-baseline"), "20260102-150405-baseline"},
		{"trailing slash", root, filepath.Join(root, "b") + "/", "b"},
		{"relative root", relTo(t, root), filepath.Join(root, "c"), "c"},
		{"beside the root", root, filepath.Join(base, "elsewhere"), ""},
		{"nested below the root", root, filepath.Join(root, "workshop", "lab2"), ""},
		{"the root itself", root, root, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(root, Latest))
			if err := UpdateLatest(tt.root, tt.dir); err != nil {
				t.Fatal(err)
			}
			got, _ := os.Readlink(filepath.Join(root, Latest))
			if got != tt.want {
				t.Errorf("latest -> %q, want %q", got, tt.want)
			}
			for _, p := range []string{base, filepath.Join(root, "workshop")} {
				if _, err := os.Lstat(filepath.Join(p, Latest)); err == nil {
					t.Errorf("a latest link appeared in %s", p)
				}
			}
			if ents, _ := filepath.Glob(filepath.Join(root, ".*tmp")); len(ents) > 0 {
				t.Errorf("left behind %v", ents)
			}
		})
	}
	// A second run moves the link; a real folder called latest is kept.
	UpdateLatest(root, filepath.Join(root, "one"))
	UpdateLatest(root, filepath.Join(root, "two"))
	if got, _ := os.Readlink(filepath.Join(root, Latest)); got != "two" {
		t.Errorf("latest -> %q after two runs, want two", got)
	}
	os.Remove(filepath.Join(root, Latest))
	os.Mkdir(filepath.Join(root, Latest), 0o755)
	if err := UpdateLatest(root, filepath.Join(root, "three")); err == nil {
		t.Error("replaced a folder called latest")
	}
}

func relTo(t *testing.T, p string) string {
	wd, _ := os.Getwd()
	r, err := filepath.Rel(wd, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ResourceAddr)
	for _, addr := range []string{"127.0.0.1:1\n", "127.0.0.1:2\n"} {
		if err := Replace(path, []byte(addr), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != addr {
			t.Errorf("content %q, want %q", b, addr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files, want 1", len(ents))
	}
	if err := Replace(filepath.Join(dir, "missing", Config), nil, 0o644); err == nil {
		t.Error("Replace into a missing folder succeeded")
	}
}
