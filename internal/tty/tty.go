// Package tty tells whether output goes to a terminal, where progress is
// redrawn in place; elsewhere (CI logs, make, a pipe) it is printed a line at
// a time.
package tty

import "golang.org/x/term"

// IsTerminal reports whether w is a terminal: an *os.File (or anything with
// a file descriptor) on which the terminal ioctl succeeds. A character device
// is not enough, since /dev/null is one and CI runners attach it.
func IsTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
