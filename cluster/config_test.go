package cluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"too many replicas", func(c *Config) { c.Replicas = 9 }, "--replicas"},
		{"no sentinels", func(c *Config) { c.Watchers = 0 }, "--sentinels"},
		{"down-after too small", func(c *Config) { c.DownAfter = 50 * time.Millisecond }, "--down-after"},
		{"failover-timeout aborts", func(c *Config) { c.FailoverTimeout = 500 * time.Millisecond }, "--failover-timeout"},
		{"min-replicas above replicas", func(c *Config) { c.MinReplicasToWrite = 3 }, "--min-replicas-to-write"},
		{"bad appendfsync", func(c *Config) { c.AppendFsync = "sometimes" }, "--appendfsync"},
		{"base port too low", func(c *Config) { c.BasePort = 80 }, "--base-port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			c.Dir = t.TempDir()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
			}
			if tt.wantErr == "" && c.Quorum != 2 {
				t.Fatalf("quorum %d, want 2 of 3", c.Quorum)
			}
		})
	}
}

func TestBasePortInUseIsNamed(t *testing.T) {
	// A busy port whose two predecessors are free: with the tests that run
	// beside this one holding ephemeral ports, the range's first port was
	// once taken too, and the error named that one (seen once beside the PostgreSQL tests).
	var ln net.Listener
	busy := 0
	for try := 0; try < 50 && busy == 0; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		free := true
		for _, q := range []int{p - 2, p - 1} {
			if f, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q)); err != nil {
				free = false
			} else {
				f.Close()
			}
		}
		if free {
			ln, busy = l, p
		} else {
			l.Close()
		}
	}
	if busy == 0 {
		t.Fatal("no busy port with two free ones before it in 50 tries")
	}
	defer ln.Close()
	c := Defaults()
	c.Dir = t.TempDir()
	c.BasePort = busy - 2
	_, err := NewLocal(c, Binaries{Server: "unused"})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(busy)) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("error %v, want one naming port %d as in use", err, busy)
	}
}

// An older server is refused with its version and the way to get 9.x; the
// older server here is Debian bookworm's real redis-server 7.0.
func TestOlderServerIsRefused(t *testing.T) {
	redis := "/usr/bin/redis-server"
	if _, err := os.Stat(redis); err != nil {
		t.Fatalf("%s missing: scripts/setup.sh --ci installs it", redis)
	}
	dir := t.TempDir()
	if err := os.Symlink(redis, filepath.Join(dir, "valkey-server")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKJEPSEN_VALKEY_BIN", dir)
	_, err := FindBinaries()
	if err == nil || !strings.Contains(err.Error(), "7.0") || !strings.Contains(err.Error(), "make setup") {
		t.Fatalf("error %v, want a refusal naming version 7.0 and 'make setup'", err)
	}
}

func TestClockFaultsWithoutLibfaketimeAreRefused(t *testing.T) {
	c := Defaults()
	c.Dir, c.FakeTime = t.TempDir(), true
	_, err := NewLocal(c, Binaries{Server: "x"})
	if err == nil || !strings.Contains(err.Error(), "libfaketime") {
		t.Fatalf("error %v, want one naming libfaketime", err)
	}
}

func TestClockOffsetSyntax(t *testing.T) {
	for _, ok := range []string{"+120", "-1.5", "+2m", "+0"} {
		if !offsetRE.MatchString(ok) {
			t.Errorf("%q rejected", ok)
		}
	}
	for _, bad := range []string{"120", "+", "+1.5.2", "abc", "+1w"} {
		if offsetRE.MatchString(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestOffsetSeconds(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
	}{
		{"+0", 0}, {"+120", 120}, {"-1.5", -1.5}, {"+30s", 30}, {"+2m", 120}, {"-1h", -3600}, {"+1d", 86400}, {"+1y", 365 * 86400},
	} {
		if !offsetRE.MatchString(tt.in) {
			t.Errorf("offsetRE refuses %q", tt.in)
		}
		if got := offsetSeconds(tt.in); got != tt.want {
			t.Errorf("offsetSeconds(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A port another run was handed minutes ago is not handed out again until its
// claim is old; a claim past portClaimFor is taken over.
func TestClaimPort(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for _, tc := range []struct {
		name string
		at   time.Time
		want bool
	}{
		{"first claim", now, true},
		{"claimed a second ago", now.Add(time.Second), false},
		{"claimed just under the limit", now.Add(portClaimFor - time.Second), false},
		{"claim expired", now.Add(portClaimFor + time.Second), true},
		{"renewed by the last claim", now.Add(portClaimFor + 2*time.Second), false},
	} {
		if got := claimPort(dir, 40001, tc.at); got != tc.want {
			t.Errorf("%s: claim %v, want %v", tc.name, got, tc.want)
		}
	}
	if !claimPort(dir, 40003, now) {
		t.Error("another port refused")
	}
	if !claimPort(filepath.Join(dir, "no", "such\x00dir"), 40005, now) {
		t.Error("a folder that cannot be written refused the port")
	}
}

// allocatePorts never hands out a port with a live claim: every port it
// returns was claimed by this call.
func TestAllocatePortsSkipsClaimed(t *testing.T) {
	ports, err := allocatePorts(0, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if claimPort(portClaimDir(), p, time.Now()) {
			t.Errorf("port %d was handed out without a claim", p)
		}
	}
}

// Free ports come from below the kernel's ephemeral range, where no port-0
// listener or outgoing connection can take one before its node binds it; a
// cluster node's bus port is claimed with it.
func TestPortsBelowTheEphemeralRange(t *testing.T) {
	eph := ephemeralLow()
	plain, err := allocatePorts(0, 6)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := allocateClusterPorts(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		ports  []int
		offset int
	}{
		{"plain", plain, 0},
		{"cluster", bus, clusterBusOffset},
	}
	for _, tt := range tests {
		for _, p := range tt.ports {
			if p < privatePortLow || p+tt.offset >= eph {
				t.Errorf("%s: port %d (+%d) outside [%d, %d)", tt.name, p, tt.offset, privatePortLow, eph)
			}
			if tt.offset > 0 && claimPort(portClaimDir(), p+tt.offset, time.Now()) {
				t.Errorf("%s: bus port %d was not claimed", tt.name, p+tt.offset)
			}
		}
	}
}
