package sentinel

import "testing"

// The replica-clock faults wait until every Sentinel has read the other
// replicas' priority 0; a reply miscounted either way steers the failover
// to the wrong replica or waits out the 15 s for nothing.
func TestZeroPriorities(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        int
	}{
		{"none", "", 0},
		{"sentinel's spelling", "name\nvalkey-1\nslave-priority\n0\nname\nvalkey-2\nslave-priority\n100", 1},
		{"the newer spelling", "replica-priority\n0\nreplica-priority\n0", 2},
		{"a value that is not 0", "slave-priority\n10", 0},
		// Field and value alternate: a name that reads like the field is a
		// value, not a field.
		{"a value named like the field", "name\nslave-priority\nslave-priority\n100", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := zeroPriorities(tc.reply); got != tc.want {
				t.Errorf("zeroPriorities(%q) = %d, want %d", tc.reply, got, tc.want)
			}
		})
	}
}
