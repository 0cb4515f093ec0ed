package history

import "testing"

func TestRefusalReasons(t *testing.T) {
	for msg, want := range map[string]string{
		"SET NX PX returned nil: another client holds the lock (not held)":                                                          "contention",
		"SET NX PX: NOREPLICAS Not enough good replicas to write.":                                                                  "noreplicas",
		"WAITAOF 1 1 100: fsynced locally 0, by 0 replica(s)":                                                                       "waitaof",
		"WAIT 1 100: 0 replica(s) acknowledged":                                                                                     "wait",
		"SET NX PX: READONLY You can't write against a read only replica.":                                                          "readonly",
		"ttl 0s below 1ms: refused before sending":                                                                                  "unreachable",
		"redsync: failed to acquire lock":                                                                                           "other",
		"redsync Lock: lock already taken, locked nodes: [0]: another client holds the lock":                                        "contention",
		"waited for a-lock-0000000001: context deadline exceeded: another client holds the lock; deleted /lockjepsen/k/b":           "contention",
		"SET NX PX: held by another client":                                                                                         "contention",
		"held by another session":                                                                                                   "contention",
		"redlock acquire: 0 OK, 5 refused, 0 unknown, 0 unreachable of 5 nodes, quorum 3, validity 5.887s (refused before sending)": "contention",
		"redlock acquire: 0 OK, 3 refused, 0 unknown, 2 unreachable of 5 nodes, quorum 3, validity 5.8s (refused before sending)":   "contention",
		"redlock acquire: 0 OK, 2 refused, 0 unknown, 3 unreachable of 5 nodes, quorum 3, validity 5.8s (refused before sending)":   "unreachable",
		"redlock acquire: 2 OK, 0 refused, 1 unknown, 2 unreachable of 5 nodes, quorum 3, validity 5.8s (refused before sending)":   "unreachable",
	} {
		if got := RefusalReason(msg); got != want {
			t.Errorf("RefusalReason(%q) = %s, want %s", msg, got, want)
		}
	}
}

func TestRefusedByMajority(t *testing.T) {
	for msg, want := range map[string]bool{
		"redlock acquire: 1 OK, 4 refused, 0 unknown, 0 unreachable of 5 nodes, quorum 3, validity 5.9s; released: info": true,
		"redlock acquire: 2 OK, 2 refused, 1 unknown, 0 unreachable of 5 nodes, quorum 3, validity 5.9s; released: info": false,
		"SET NX PX: i/o timeout": false,
	} {
		if got := RefusedByMajority(msg); got != want {
			t.Errorf("RefusedByMajority(%q) = %v, want %v", msg, got, want)
		}
	}
}

// TestQuorumTallyReadsBackWhatItWrites: the recipe writes the tally with
// String and the checker reads it with ParseQuorumTally, also from inside
// the longer error the recipe wraps it in; a tally cut short or of no
// nodes is no tally.
func TestQuorumTallyReadsBackWhatItWrites(t *testing.T) {
	for _, tt := range []struct {
		name   string
		msg    string
		want   QuorumTally
		parsed bool
	}{
		{"as written", QuorumTally{1, 4, 0, 0, 5, 3}.String(), QuorumTally{1, 4, 0, 0, 5, 3}, true},
		{"wrapped", "acquire: " + QuorumTally{2, 0, 1, 2, 5, 3}.String() + ", validity 5.8s; released: info", QuorumTally{2, 0, 1, 2, 5, 3}, true},
		{"committed text", "redlock acquire: 0 OK, 3 refused, 0 unknown, 2 unreachable of 5 nodes, quorum 3, validity 5.8s", QuorumTally{0, 3, 0, 2, 5, 3}, true},
		{"cut short", "redlock acquire: 0 OK, 3 refused", QuorumTally{}, false},
		{"no nodes", QuorumTally{}.String(), QuorumTally{}, false},
		{"another recipe", "SET NX PX returned nil: another client holds the lock", QuorumTally{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseQuorumTally(tt.msg)
			if ok != tt.parsed || (ok && got != tt.want) {
				t.Errorf("ParseQuorumTally(%q) = %+v, %v; want %+v, %v", tt.msg, got, ok, tt.want, tt.parsed)
			}
		})
	}
}
