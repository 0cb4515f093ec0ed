package resource

import "fmt"

// The replies are read aloud in workshops, so they name the holder that was
// turned away and the cause in the terms of the lesson: an older number (a
// newer holder got there first) or the same number from another holder (the
// fence counter on Valkey repeated itself after a failover).

func rejectReason(m Mode, h Holder, row Row) string {
	switch {
	case h.Fence < row.LastFence:
		did := "written"
		if m == ModeReadWrite {
			did = "read or written"
		}
		return fmt.Sprintf("rejected: fence %d is older than last_fence %d — a newer holder has %s", h.Fence, row.LastFence, did)
	case h.Fence == row.LastFence && h.Token != row.LastToken:
		return fmt.Sprintf("rejected: fence %d was already used by another holder (token %s); a failover probably lost an INCR", h.Fence, shortToken(row.LastToken))
	case h.Fence == row.LastFence:
		return fmt.Sprintf("rejected: fence %d has already written once; in mode write each fence number writes once — acquire again for a new number", h.Fence)
	}
	// last_fence never goes down, so a rejection always lands in a case above;
	// say what was seen rather than guess if that ever stops being true.
	return fmt.Sprintf("rejected: fence %d did not pass the check against last_fence %d", h.Fence, row.LastFence)
}

// unfencedNote explains, in mode none, what a fence would have done with a write
// that landed anyway: the corruption the workshop is meant to see.
func unfencedNote(h Holder, before Row) string {
	if h.Fence == 0 {
		return ""
	}
	switch {
	case h.Fence < before.LastFence:
		return fmt.Sprintf("accepted without a check (mode none): fence %d is older than last_fence %d — a fence check would have turned this stale write away", h.Fence, before.LastFence)
	case h.Fence == before.LastFence && h.Token != before.LastToken:
		return fmt.Sprintf("accepted without a check (mode none): fence %d was already used by another holder (token %s) — a fence check would have turned this write away", h.Fence, shortToken(before.LastToken))
	}
	return ""
}

// shortToken abbreviates a token the way the history viewer does: enough to tell
// two holders apart when read aloud.
func shortToken(t string) string {
	switch {
	case t == "":
		return "(none)"
	case len(t) > 8:
		return t[:4] + "…"
	}
	return t
}
