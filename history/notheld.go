package history

import "strings"

// SaysNotHeld reports whether a failed extend's or release's error text is
// the server (or the lock library) saying the token did not hold the lock:
// DELIFEQ, SET ... IFEQ or a compare-and-delete script answering 0 or nil
// (the recipes' "(not held)"), redsync's "not unlocked" or "already expired",
// valkeylock's "already given the lock up". A refusal by an error reply or a
// dead node is not one. The checker reads it as the server ending the lease
// there; the metrics count it as an unlock mismatch.
func SaysNotHeld(msg string) bool {
	for _, s := range []string{"not held", "not unlocked", "already expired", "already given the lock up"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
