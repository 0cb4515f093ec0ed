package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed history is refused by the real binary with exit 254, before any
// verdict, naming the file, the line and what is wrong; lines need no index.
func TestCheckRefusesMalformedHistory(t *testing.T) {
	const acq = `{"time":100000000,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":1000}`
	const acqOK = `{"time":100500000,"process":0,"type":"ok","f":"acquire","key":"k","token":"A"}`
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"time backwards", []string{acq, acqOK, `{"time":50000000,"process":0,"type":"invoke","f":"release","key":"k","token":"A"}`},
			"history.jsonl:3: process 0's time goes backwards (50 ms after 100.5 ms on line 2)"},
		{"completion before invoke", []string{acq, `{"time":90000000,"process":0,"type":"ok","f":"acquire","key":"k","token":"A"}`},
			"history.jsonl:2: completion stamped before its invoke"},
		{"token differs", []string{acq, `{"time":100500000,"process":0,"type":"ok","f":"acquire","key":"k","token":"B"}`},
			`history.jsonl:2: completion's token "B" differs from its invoke's "A" (line 1)`},
		{"no ttl", []string{`{"time":1,"process":0,"type":"invoke","f":"extend","key":"k","token":"A"}`},
			`history.jsonl:1: extend invoke without "ttl_ms"`},
		{"negative ttl", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":-1}`},
			`history.jsonl:1: acquire with a negative "ttl_ms" (-1)`},
		{"ttl overflow", []string{`{"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":9300000000000000}`},
			`history.jsonl:1: acquire "ttl_ms" 9300000000000000 overflows when turned into nanoseconds`},
		{"time at the int64 limit", []string{`{"time":9223372036854775807,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":10}`},
			`history.jsonl:1: "time" 9223372036854775807 is beyond CLOCK_MONOTONIC's range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(strings.Join(tt.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "check", "-no-html", dir).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
				t.Fatalf("exit %v, want 254\n%s", err, out)
			}
			if !strings.Contains(string(out), filepath.Join(dir, tt.want)) {
				t.Fatalf("message does not name %q:\n%s", tt.want, out)
			}
			if strings.Contains(string(out), "VALID") {
				t.Fatalf("a verdict was printed:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
				t.Fatal("results.json written for a malformed history")
			}
		})
	}
}
