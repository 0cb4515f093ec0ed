package cluster

import (
	"context"
	"encoding/json"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// composeCommands reads each service's `command:` (written as a JSON array on
// one line) from docker-compose.yml, with the default subnet substituted.
func composeCommands(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "${LOCKJEPSEN_SUBNET_PREFIX:-10.214.0}", "10.214.0")
	out := map[string][]string{}
	service := ""
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":") {
			service = strings.TrimSuffix(strings.TrimSpace(line), ":")
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "command: "); ok && service != "" {
			var args []string
			if err := json.Unmarshal([]byte(rest), &args); err != nil {
				t.Fatalf("%s: command is not a one-line JSON array: %v", service, err)
			}
			out[service] = args
		}
	}
	return out
}

// TestComposeMatchesLocalConfig: every directive the local runtime writes is
// passed, with the same value, to the compose services (except what must
// differ in a container: bind address, file locations).
func TestComposeMatchesLocalConfig(t *testing.T) {
	cmds := composeCommands(t)
	cfg := Defaults()
	cfg.Quorum = cfg.Watchers/2 + 1
	n := Node{Dir: "/data", LogFile: "/data/x.log"}
	check := func(service, conf string) {
		args := " " + strings.Join(cmds[service], " ") + " "
		if len(cmds[service]) == 0 {
			t.Fatalf("docker-compose.yml has no command for %s", service)
		}
		for _, line := range strings.Split(strings.TrimSpace(conf), "\n") {
			key, val, _ := strings.Cut(line, " ")
			switch key {
			case "bind", "logfile", "pidfile":
				continue // containers listen on all interfaces and log to stdout
			}
			val = strings.ReplaceAll(val, `""`, "")
			want := " --" + key + " " + val + " "
			if !strings.Contains(args, want) {
				t.Errorf("%s: docker-compose.yml lacks %q (the local runtime writes %q)", service, strings.TrimSpace(want), line)
			}
		}
	}
	check("valkey-0", ValkeyConf(&cfg, &n, 6379, ""))
	check("valkey-1", ValkeyConf(&cfg, &n, 6379, "10.214.0.10:6379"))
	check("sentinel-0", watcherKinds[roleSentinel].Conf(&cfg, &n, 26379, "10.214.0.10:6379"))
}

// TestComposeUp: `docker-compose up` alone gives a ready topology that the host
// reaches at the fixed addresses; `docker-compose down` leaves nothing.
func TestComposeUp(t *testing.T) {
	t.Parallel()
	api := needDocker(t)
	testslot.Hold(t)
	composeMu.Lock()
	t.Cleanup(composeMu.Unlock)
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker-compose is not installed in CI: %v", err)
		}
		t.Skip("docker-compose is not installed")
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(compose, args...)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker-compose %v: %v\n%s", args, err, out)
		}
	}
	start := time.Now()
	run("up", "-d")
	t.Cleanup(func() {
		run("down", "-v", "-t", "1")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", dockerLabelCompose)})
		if err != nil || len(cs.Items) != 0 {
			t.Errorf("after docker-compose down: %d containers left (%v)", len(cs.Items), err)
		}
	})
	// The local runtime's readiness check, pointed at the compose addresses.
	l := &Local{cfg: Defaults(), procs: map[string]*Proc{}, adm: newAdmin()}
	defer l.adm.close()
	for i, a := range []string{"10.214.0.10:6379", "10.214.0.11:6379", "10.214.0.12:6379", "10.214.0.20:26379", "10.214.0.21:26379", "10.214.0.22:26379"} {
		kind, name := RoleReplica, "valkey-"+string(rune('0'+i))
		if i == 0 {
			kind = RolePrimary
		}
		if i >= 3 {
			kind, name = roleSentinel, "sentinel-"+string(rune('0'+i-3))
		}
		l.nodes = append(l.nodes, Node{Name: name, Kind: kind, Addr: a, PID: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := l.WaitReady(ctx); err != nil {
		t.Fatalf("compose topology not ready: %v", err)
	}
	t.Logf("docker-compose up to ready cluster: %v", time.Since(start).Round(time.Millisecond))
	for {
		c, err := net.DialTimeout("tcp", "10.214.0.30:8080", time.Second)
		if err == nil {
			c.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the fenced resource does not answer on 10.214.0.30:8080: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
