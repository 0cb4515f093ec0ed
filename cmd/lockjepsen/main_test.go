package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockjepsen-cli-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "lockjepsen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Bad input is refused before anything starts, with exit 2 and a message that
// names the problem.
func TestBadInputExitsTwoAndNamesTheProblem(t *testing.T) {
	corrupt := t.TempDir()
	os.WriteFile(filepath.Join(corrupt, "history.jsonl"), []byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"t","ttl_ms":5}`+"\n"+`{"index":1,"time":6,"process":0,"type":"maybe","f":"acquire"}`+"\n"), 0o644)
	busy := t.TempDir()
	os.WriteFile(filepath.Join(busy, "history.jsonl"), []byte("\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "--no-such-flag"}, "no-such-flag"},
		{[]string{"run", "--fence", "sometimes"}, "--fence"},
		{[]string{"run", "--scenario", "meteor"}, `unknown scenario "meteor"`},
		{[]string{"run", "--recipe", "paxos"}, "--recipe"},
		{[]string{"run", "--recipe", "redsync"}, "--fence none"},
		{[]string{"run", "--wait", "1"}, "--wait"},
		{[]string{"run", "--waitaof", "1:1:100ms"}, "--appendonly"},
		{[]string{"run", "--min-replicas", "x:y"}, "--min-replicas"},
		{[]string{"run", "--faults", "meteor"}, `unknown fault "meteor"`},
		{[]string{"run", "--faults", "partition"}, "docker"},
		{[]string{"run", "--ttl", "1ms"}, "--ttl"},
		{[]string{"run", "--out", busy}, "already holds a run"},
		{[]string{"cluster", "up", "--base-port", "80"}, "--base-port"},
		{[]string{"cluster", "up", "--down-after", "10ms"}, "--down-after"},
		{[]string{"cluster", "status", "--dir", t.TempDir()}, "no cluster"},
		{[]string{"check", filepath.Join(t.TempDir(), "missing")}, "not a run directory"},
		{[]string{"check", corrupt}, "history.jsonl:2"},
		{[]string{"check"}, "one run directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("message does not name %q:\n%s", tt.want, out)
			}
		})
	}
}

func TestHelpListsEveryCommandAndExitsZero(t *testing.T) {
	out, err := exec.Command(bin, "help").CombinedOutput()
	if err != nil {
		t.Fatalf("help: %v\n%s", err, out)
	}
	for _, c := range []string{"run", "check", "cluster", "sweep", "bench", "resource"} {
		if !strings.Contains(string(out), "  "+c+" ") {
			t.Errorf("help does not list %s:\n%s", c, out)
		}
	}
	if strings.Contains(string(out), "  client ") {
		t.Error("help lists the hidden client subcommand")
	}
}
