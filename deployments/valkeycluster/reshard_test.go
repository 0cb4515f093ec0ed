package valkeycluster

import (
	"strings"
	"testing"
)

// CLUSTER GETSLOTMIGRATIONS as the admin connection (RESP2) flattens it:
// each job's map a field, value list, the jobs one after another, an empty
// message kept as an empty line.
func TestParseSlotMigrations(t *testing.T) {
	job := func(name, state, msg string) string {
		return strings.Join([]string{"name", name, "operation", "EXPORT", "slot_ranges", "12685-12685",
			"target_node", "t", "source_node", "s", "create_time", "1", "last_update_time", "2", "last_ack_time", "3",
			"state", state, "message", msg, "cow_size", "0", "remaining_repl_size", "0"}, "\n")
	}
	tests := []struct {
		name, out string
		states    []string
	}{
		{"none", "", nil},
		{"one done", job("a", "success", ""), []string{"success"}},
		{"an old one and a running one", job("a", "success", "") + "\n" + job("b", "snapshotting", "waiting"), []string{"success", "snapshotting"}},
		{"a failed one with its message", job("a", "failed", "") + "\n" + job("b", "failed", "Timed out"), []string{"failed", "failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := parseSlotMigrations(tt.out)
			if len(jobs) != len(tt.states) {
				t.Fatalf("%d jobs, want %d: %v", len(jobs), len(tt.states), jobs)
			}
			for i, j := range jobs {
				if j["state"] != tt.states[i] || j["operation"] != "EXPORT" || j["remaining_repl_size"] != "0" {
					t.Errorf("job %d: %v, want state %s", i, j, tt.states[i])
				}
			}
		})
	}
}
