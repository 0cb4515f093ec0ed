package tty

import (
	"bytes"
	"os"
	"testing"
)

// /dev/null is a character device but not a terminal: the mistake the old
// ModeCharDevice test made.
func TestNotTerminals(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	for name, v := range map[string]any{"/dev/null": null, "file": f, "pipe": w, "buffer": &bytes.Buffer{}, "nil": nil} {
		if IsTerminal(v) {
			t.Errorf("%s reported as a terminal", name)
		}
	}
}
