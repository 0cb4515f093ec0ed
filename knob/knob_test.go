package knob

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"30s", 30 * time.Second, false},
		{"30", 30 * time.Second, false},
		{"0.5", 500 * time.Millisecond, false},
		{"1m30s", 90 * time.Second, false},
		{"soon", 0, true},
		{"", 0, true},
		// Floats no int64 of nanoseconds holds: once -292 years, accepted.
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"-Inf", 0, true},
		{"1e300", 0, true},
		{"-1e300", 0, true},
		{"9223372037", 0, true}, // just past MaxInt64 ns
		{"-2.5", -2500 * time.Millisecond, false},
	} {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestFlagValuesRefuseOutOfRange(t *testing.T) {
	var d time.Duration
	var n int
	var s string
	for _, tt := range []struct {
		name string
		set  func() error
		want string // "" accepts
	}{
		{"duration in range", func() error { return Duration{D: &d, Min: time.Second}.Set("2s") }, ""},
		{"duration below", func() error { return Duration{D: &d, Min: time.Second, Why: "because"}.Set("10ms") }, "1s or more (because)"},
		{"duration above", func() error { return Duration{D: &d, Max: time.Second}.Set("2s") }, "0s to 1s"},
		{"int in range", func() error { return Int{N: &n, Min: 1, Max: 3}.Set("2") }, ""},
		{"int above", func() error { return Int{N: &n, Min: 1, Max: 3}.Set("4") }, "want 1 to 3"},
		{"int not a number", func() error { return Int{N: &n, Max: 3}.Set("x") }, "not a whole number"},
		{"choice", func() error { return Choice{S: &s, Among: FenceModes}.Set("write") }, ""},
		{"choice unknown", func() error { return Choice{S: &s, Among: FenceModes}.Set("sometimes") }, "none, write, read-write"},
	} {
		err := tt.set()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

func TestReplicationKnobs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want any
		err  string
	}{
		{"1:100ms", Wait{Replicas: 1, TimeoutMs: 100}, ""},
		{"2:250", Wait{Replicas: 2, TimeoutMs: 250}, ""},
		{"", Wait{}, ""},
		{"1", nil, "replicas:timeout"},
		{"-1:100ms", nil, ">= 0"},
		{"1:-5", nil, "not negative"},
	} {
		got, err := ParseWait(tt.in)
		check(t, "wait "+tt.in, got, err, tt.want, tt.err)
	}
	for _, tt := range []struct {
		in   string
		want any
		err  string
	}{
		{"1:1:100ms", WaitAOF{Local: 1, Replicas: 1, TimeoutMs: 100}, ""},
		{"0:2:10", WaitAOF{Replicas: 2, TimeoutMs: 10}, ""},
		{"2:1:100ms", nil, "local is 0 or 1"},
		{"1:1", nil, "local:replicas:timeout"},
	} {
		got, err := ParseWaitAOF(tt.in)
		check(t, "waitaof "+tt.in, got, err, tt.want, tt.err)
	}
	for _, tt := range []struct {
		in   string
		want any
		err  string
	}{
		{"1:10", MinReplicas{Count: 1, LagS: 10}, ""},
		{"1:1s", MinReplicas{Count: 1, LagS: 1}, ""},
		{"", MinReplicas{LagS: DefaultMinReplicasLag}, ""},
		{"x:y", nil, "whole numbers"},
		{"1", nil, "count:lag-seconds"},
	} {
		got, err := ParseMinReplicas(tt.in)
		check(t, "min-replicas "+tt.in, got, err, tt.want, tt.err)
	}
}

func check(t *testing.T, name string, got any, err error, want any, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: error %v, want one saying %q", name, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("%s = %+v, %v; want %+v", name, got, err, want)
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"16mb", 16 << 20, true}, {"16MB", 16 << 20, true}, {"4m", 4 << 20, true}, {"512kb", 512 << 10, true},
		{"1gb", 1 << 30, true}, {"1048576", 1 << 20, true}, {"100b", 100, true},
		{"", 0, false}, {"lots", 0, false}, {"-1mb", 0, false}, {"1.5mb", 0, false}, {"16 tb", 0, false}, {"99999999gb", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
