package resource

import "fmt"

// Mode says which operations present a fence and have it checked.
type Mode string

const (
	// ModeNone checks nothing: every write lands, which is how a double holder
	// corrupts data when nobody fences.
	ModeNone Mode = "none"
	// ModeWrite is the Valkey 9 lock article's statement on writes only: one accepted write per
	// fence number. Reads are not checked, so a stale holder that read before the
	// new holder can still write after it (a lost update).
	ModeWrite Mode = "write"
	// ModeReadWrite also checks reads and lets them raise last_fence, so a holder
	// that read before a newer holder cannot write afterwards. A section presents
	// its number twice, so the token goes with it: equal numbers pass only for the
	// token that set last_fence.
	ModeReadWrite Mode = "read-write"
)

// Modes lists the modes in teaching order.
var Modes = []Mode{ModeNone, ModeWrite, ModeReadWrite}

// ParseMode turns a flag or JSON value into a Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown resource mode %q: use none, write or read-write", s)
}

// fenced reports whether op presents a fence that the database checks in mode m.
func (m Mode) fenced(op string) bool {
	switch m {
	case ModeWrite:
		return op == OpWrite
	case ModeReadWrite:
		return true
	}
	return false
}
