package history

import (
	"fmt"
	"strings"
)

// RefusalReasons are what a failed acquire's error says turned it away: the
// values of the metrics' reason label and of the sweep's refusal columns.
var RefusalReasons = []string{"contention", "noreplicas", "wait", "waitaof", "readonly", "unreachable", "other"}

// RefusalReason sorts a failed acquire's error text. Contention is the only
// failure that is the lock doing its job; every other fail is the cost of a
// setting (or a fault) turning a would-be holder away. The texts are the
// ones lock/ writes into the history's error field.
func RefusalReason(msg string) string {
	if rc, ok := ParseQuorumTally(msg); ok {
		// A majority acquire says how each node answered: nodes that refused
		// the SET NX hold another client's key (the lock working), nodes
		// unreachable are the fault's cost.
		switch {
		case rc.Refused > rc.Nodes-rc.Quorum:
			return "contention" // refusals alone left no majority
		case rc.Unreachable > 0:
			return "unreachable" // reachable, those nodes might have made a majority
		case rc.Refused > 0:
			return "contention"
		}
		return "other"
	}
	switch {
	case isContention(msg):
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

// QuorumTally is how the nodes answered one acquire that needs a majority of
// independent primaries (Redlock's), as such a recipe writes it into the
// error field: String is the text and ParseQuorumTally reads it back, so
// the writer and every reader keep one format, the one committed histories
// carry ("redlock acquire: 1 OK, 4 refused, 0 unknown, 0 unreachable of 5
// nodes, quorum 3", then what the recipe adds).
type QuorumTally struct {
	OK, Refused, Unknown, Unreachable, Nodes, Quorum int
}

const (
	tallyPrefix   = "redlock acquire: "
	answersFormat = "%d OK, %d refused, %d unknown, %d unreachable of %d nodes, quorum %d"
)

// Answers is the tally without the acquire's prefix ("1 OK, 4 refused, 0
// unknown, 0 unreachable of 5 nodes, quorum 3"), which an extend's or a
// release's error carries too.
func (t QuorumTally) Answers() string {
	return fmt.Sprintf(answersFormat, t.OK, t.Refused, t.Unknown, t.Unreachable, t.Nodes, t.Quorum)
}

func (t QuorumTally) String() string { return tallyPrefix + t.Answers() }

// ParseQuorumTally reads a QuorumTally from an acquire's error text.
func ParseQuorumTally(msg string) (QuorumTally, bool) {
	var t QuorumTally
	i := strings.Index(msg, tallyPrefix)
	if i < 0 {
		return t, false
	}
	_, err := fmt.Sscanf(msg[i:], tallyPrefix+answersFormat, &t.OK, &t.Refused, &t.Unknown, &t.Unreachable, &t.Nodes, &t.Quorum)
	return t, err == nil && t.Nodes > 0
}

// RefusedByMajority reports whether an acquire recorded unknown (info) was
// in fact refused by a majority: the Redlock recipe reported info when the
// cleanup release of the one or two nodes it got could not be confirmed,
// though the nodes that refused already made a majority impossible. It now
// reports such an acquire failed; the histories recorded before that still
// carry these, and availability counts them as contention.
func RefusedByMajority(msg string) bool {
	t, ok := ParseQuorumTally(msg)
	return ok && t.Refused > t.Nodes-t.Quorum
}

// contentionPhrases are the words a refused acquire uses when another client
// holds the lock: the recipes' own ("another client holds the lock", which
// they add to a library's own error, lock's contended) and the exec protocol's
// ("held by another", docs/protocol.md). Availability counts such refusals as
// the lock working, not as errors.
var contentionPhrases = []string{"another client holds the lock", "held by another"}

// isContention reports whether an acquire's error says the lock was held by
// someone else.
func isContention(msg string) bool {
	for _, p := range contentionPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
