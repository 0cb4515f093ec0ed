package cluster

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// DefaultCache is where scripts/setup.sh builds Valkey and records what it found.
const DefaultCache = "/var/cache/lockjepsen"

// Binaries are the Valkey programs and the optional libfaketime a runtime uses.
type Binaries struct {
	Server, CLI, Benchmark string
	Version                string // e.g. 9.1.2
	FaketimeLib            string // empty when libfaketime is not installed
	// NoLuaServer and OldServer are the extra builds setup.sh --builds makes
	// (9.x with BUILD_LUA=no, and 8.1); empty when not built.
	NoLuaServer, OldServer string
	OldVersion             string
}

// ServerFor is the server binary a node runs under cfg.
func (b Binaries) ServerFor(cfg Config, node string) string {
	switch {
	case node == cfg.OldNode():
		return b.OldServer
	case cfg.Build == "nolua":
		return b.NoLuaServer
	}
	return b.Server
}

// Program is another program of the installation the server came from (a
// watching node's), or the server itself where the installation lacks it:
// the others are the server under another name, started in their mode by
// a flag.
func (b Binaries) Program(name string) string {
	p := filepath.Join(filepath.Dir(b.Server), name)
	if _, err := os.Stat(p); err != nil {
		return b.Server
	}
	return p
}

// FindBinaries locates Valkey 9: $LOCKJEPSEN_VALKEY_BIN, then the directory
// recorded by scripts/setup.sh, then PATH. It refuses anything older than 9.0,
// naming what it found and how to get 9.x.
func FindBinaries() (Binaries, error) {
	env := readSetupEnv()
	var dirs []string
	// The variable, when set, is the only place looked at: a directory
	// without valkey-server was passed over for setup.sh's build or PATH,
	// so a run used another server than the one asked for.
	d, fromEnv := os.Getenv("LOCKJEPSEN_VALKEY_BIN"), false
	if d != "" {
		if _, err := os.Stat(filepath.Join(d, "valkey-server")); err != nil {
			return Binaries{}, fmt.Errorf("LOCKJEPSEN_VALKEY_BIN=%s holds no valkey-server (%v): point it at a directory of Valkey 9 binaries, or unset it", d, err)
		}
		dirs, fromEnv = append(dirs, d), true
	}
	if d := env["LOCKJEPSEN_VALKEY_BIN"]; d != "" && !fromEnv {
		dirs = append(dirs, d)
	}
	var b Binaries
	found := false
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "valkey-server")); err == nil {
			b = Binaries{
				Server:    filepath.Join(d, "valkey-server"),
				CLI:       filepath.Join(d, "valkey-cli"),
				Benchmark: filepath.Join(d, "valkey-benchmark"),
			}
			found = true
			break
		}
	}
	if !found {
		s, err := exec.LookPath("valkey-server")
		if err != nil {
			return b, fmt.Errorf("valkey-server not found: run 'make setup' (builds Valkey 9.1.2 into %s) or put Valkey >= 9.0 on PATH", DefaultCache)
		}
		d := filepath.Dir(s)
		b = Binaries{Server: s, CLI: filepath.Join(d, "valkey-cli"), Benchmark: filepath.Join(d, "valkey-benchmark")}
	}
	v, err := ServerVersion(b.Server)
	if err != nil {
		if fromEnv {
			return b, fmt.Errorf("LOCKJEPSEN_VALKEY_BIN=%s: %w: is it a directory of Valkey binaries?", d, err)
		}
		return b, err
	}
	b.Version = v
	if major(v) < 9 {
		return b, fmt.Errorf("%s is Valkey %s, lockjepsen needs 9.0 or newer (DELIFEQ arrived in 9.0): run 'make setup' to build 9.1.2, or set LOCKJEPSEN_VALKEY_BIN to a directory holding Valkey 9 binaries", b.Server, v)
	}
	b.FaketimeLib = findFaketime(env)
	b.NoLuaServer = extraServer(env, "LOCKJEPSEN_VALKEY_NOLUA_BIN")
	if b.OldServer = extraServer(env, "LOCKJEPSEN_VALKEY_OLD_BIN"); b.OldServer != "" {
		b.OldVersion, _ = ServerVersion(b.OldServer)
	}
	return b, nil
}

// extraServer finds an extra build's valkey-server from the environment or
// setup.sh's env file; "" when it is not there.
func extraServer(env map[string]string, key string) string {
	for _, d := range []string{os.Getenv(key), env[key]} {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "valkey-server"); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var versionRE = regexp.MustCompile(`v=([0-9]+\.[0-9]+\.[0-9]+)`)

// ServerVersion runs `valkey-server --version` and returns the version.
func ServerVersion(server string) (string, error) {
	out, err := exec.Command(server, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", server, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("cannot read a version from %q", strings.TrimSpace(string(out)))
	}
	return string(m[1]), nil
}

func major(v string) int {
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

func findFaketime(env map[string]string) string {
	for _, p := range []string{
		os.Getenv("LOCKJEPSEN_FAKETIME_LIB"),
		env["LOCKJEPSEN_FAKETIME_LIB"],
		"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
		"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
		"/usr/lib/faketime/libfaketime.so.1",
	} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func readSetupEnv() map[string]string {
	m := map[string]string{}
	dir := os.Getenv("LOCKJEPSEN_CACHE")
	if dir == "" {
		dir = DefaultCache
	}
	f, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

// Check says whether these binaries can run cfg on the local runtime; the
// runner asks before it creates a run folder.
func (b Binaries) Check(cfg Config) error {
	if cfg.FakeTime && cfg.runtime() == "local" && b.FaketimeLib == "" {
		return fmt.Errorf("clock faults need libfaketime, which is not installed: run 'make setup' (or apt-get install libfaketime)")
	}
	if cfg.Build == "nolua" && b.NoLuaServer == "" {
		return fmt.Errorf("--valkey-build nolua needs the Lua-less build: run 'make setup-builds' (about two minutes, once)")
	}
	if cfg.OldReplica && b.OldServer == "" {
		return fmt.Errorf("--mixed-versions needs the Valkey 8.1 build: run 'make setup-builds' (about two minutes, once)")
	}
	return nil
}
