package checker

import "testing"

// A lost update inside a double grant's overlap is blamed on what caused the
// double grant, even when both sections began after the fault healed (the
// resource's own attribution starts at the earlier section, and saw no fault
// in force: "none" before inheritCauses).
func TestLostUpdatesInheritTheDoubleGrantsCause(t *testing.T) {
	h := newHB().
		nem("cut-replication", "valkey-1", 0).
		acq(0, "A", 6000, 10, 11, ok, 0).
		nem("kill", "valkey-1", 20).
		nem("failover", "valkey-2", 30).
		nem("heal-replication", "valkey-1", 35).
		nem("restart", "valkey-1", 40).
		acq(1, "B", 6000, 50, 51, ok, 0).
		// Long after the heal, both holders read 5 and write 6.
		read(0, "A", 0, 5, 2000, 2001, ok).
		read(1, "B", 0, 5, 2002, 2003, ok).
		write(0, "A", 0, 6, 2004, 2005, ok).
		write(1, "B", 0, 6, 2006, 2007, ok).
		rel(1, "B", 2100, 2101, ok).
		rel(0, "A", 2102, 2103, fail)
	r, err := Check(h.build(), nil, Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, v := range r.Violations {
		if v.Kind == "lost-update" {
			lost++
			if v.Cause != "failover" {
				t.Errorf("lost update blamed on %q, want the double grant's failover: %s", v.Cause, v.Explanation)
			}
		}
	}
	if lost != 1 {
		t.Fatalf("%d lost updates, want 1: %+v", lost, r.Violations)
	}
}
