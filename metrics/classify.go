package metrics

import "strings"

// Refusal reasons of a failed acquire, the values of the reason label.
var Reasons = []string{"contention", "noreplicas", "wait", "waitaof", "readonly", "unreachable", "other"}

// RefusalReason sorts a failed acquire's error text. Contention is the only
// failure that is the lock doing its job; every other fail is the cost of a
// setting (or a fault) turning a would-be holder away. The texts are the
// ones lock/ writes into the history's error field.
func RefusalReason(msg string) string {
	switch {
	case strings.Contains(msg, "another client holds the lock"):
		return "contention"
	case strings.Contains(msg, "NOREPLICAS"):
		return "noreplicas"
	case strings.Contains(msg, "WAITAOF"):
		return "waitaof"
	case strings.Contains(msg, "WAIT "):
		return "wait"
	case strings.Contains(msg, "READONLY"):
		return "readonly"
	case strings.Contains(msg, "dial") || strings.Contains(msg, "connection refused") || strings.Contains(msg, "refused before sending"):
		return "unreachable"
	}
	return "other"
}

// UnlockMismatch reports whether a failed release's error text is the server
// (or the lock library) saying the token did not hold the lock: DELIFEQ or a
// compare-and-delete script replied 0 (lock.ErrNotHeld, "... (not held)"),
// redsync's "not unlocked" or "already expired", valkeylock's "already given
// the lock up". A release refused by an error reply or a dead node is not one.
func UnlockMismatch(msg string) bool {
	for _, s := range []string{"not held", "not unlocked", "already expired", "already given the lock up"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
