package checker

import "testing"

func TestCountAndHumanDuration(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(1, "regression"), "1 regression"},
		{Count(2, "regression"), "2 regressions"},
		{Count(0, "failover"), "0 failovers"},
		{Count(1, "direct witness"), "1 direct witness"},
		{Count(3, "direct witness"), "3 direct witnesses"},
		{Count(2, "read|reads"), "2 reads"},
		{Count(2, "entry"), "2 entries"},
		{HumanDuration(0.35), "0.3 ms"},
		{HumanDuration(27.4), "27 ms"},
		{HumanDuration(6000), "6 s"},
		{HumanDuration(1804), "1.8 s"},
		{HumanDuration(25000), "25 s"},
		{HumanDuration(125000), "2 min 5 s"},
		{HumanDuration(120000), "2 min"},
		{HumanDuration(3_720_000), "1 h 2 min"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
