package runner

import (
	"context"
	"fmt"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/history"
)

// Faults in lockjepsen's own parts, dealt by another hand than the nemesis's
// (the OOM killer, an operator): the resource service or one client process
// SIGKILLed during the workload. What the run does is the design each case
// states; that it never panics, keeps what it recorded and leaves nothing
// running is asserted for both.
func TestOwnPartsKilledDuringARun(t *testing.T) {
	tests := []struct {
		name string
		// victim picks, among this test process's children, the one to kill.
		victim func(argv []string) bool
		// want reads the outcome and the run folder.
		want func(t *testing.T, o Outcome, out string)
	}{
		{
			// Every read and write after it would end unknown, and a verdict
			// over them says less than it seems to: the run stops, checks
			// what it has, and exits 255 saying why.
			name:   "resource service",
			victim: func(argv []string) bool { return len(argv) > 2 && argv[1] == "resource" && argv[2] == "serve" },
			want: func(t *testing.T, o Outcome, out string) {
				if o.ExitCode != exitcode.Crashed || o.Err == nil || !strings.Contains(o.Err.Error(), "the resource service") {
					t.Errorf("exit %d, err %v; want 255 naming the resource service", o.ExitCode, o.Err)
				}
				// Exported from the database once the service was gone.
				if _, err := os.Stat(filepath.Join(out, "resource.jsonl")); err != nil {
					t.Errorf("no resource.jsonl: %v", err)
				}
			},
		},
		{
			// One client fewer is a run that goes on, as after kill-holder;
			// the history says what happened to it.
			name:   "client process",
			victim: func(argv []string) bool { return len(argv) == 2 && argv[1] == "client" },
			want: func(t *testing.T, o Outcome, out string) {
				if o.Err != nil || o.ExitCode != exitcode.Valid {
					t.Errorf("exit %d, err %v; want a valid run that went on without the client", o.ExitCode, o.Err)
				}
				ev, err := history.ReadFile(filepath.Join(out, "nemesis.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, e := range ev {
					if e.F == history.NClientExited {
						n++
						t.Logf("recorded: %s", e.Detail)
					}
				}
				if n != 1 {
					t.Errorf("%d %s events in nemesis.jsonl, want 1", n, history.NClientExited)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testslot.Hold(t)
			cfg := config(t, "baseline", func(c *Config) { c.TimeLimit = 12 * time.Second; c.Clients = 4 })
			killed := make(chan string, 1)
			go func() {
				// Once the workload is under way.
				for i := 0; i < 600; i++ {
					if st, err := os.Stat(filepath.Join(cfg.Out, "history.jsonl")); err == nil && st.Size() > 20_000 {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				for _, p := range children() {
					if tt.victim(p.argv) {
						_ = syscall.Kill(p.pid, syscall.SIGKILL)
						killed <- fmt.Sprintf("pid %d %v", p.pid, p.argv)
						return
					}
				}
				killed <- ""
			}()
			o := Run(context.Background(), cfg, testLog{t})
			if v := <-killed; v == "" {
				t.Fatal("found no process to kill")
			} else {
				t.Logf("SIGKILLed %s; run: exit %d, err %v", v, o.ExitCode, o.Err)
			}
			if !o.Checked {
				t.Fatalf("the run's history was not checked: %v", o.Err)
			}
			tt.want(t, o, cfg.Out)
			if _, _, err := CheckDir(cfg.Out); err != nil {
				t.Errorf("re-check of the run folder: %v", err)
			}
			assertNoProcessesLeft(t, cfg.Out)
		})
	}
}

type child struct {
	pid  int
	argv []string
}

// children lists this process's child processes with their arguments.
func children() []child {
	me := strconv.Itoa(os.Getpid())
	var out []child
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[1] != me {
			continue
		}
		dir := filepath.Dir(f)
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		pid, _ := strconv.Atoi(filepath.Base(dir))
		out = append(out, child{pid, strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")})
	}
	return out
}

// A run folder on a full disk: the first event the history cannot take stops
// the run (one message, exit 255), and what was written before it is a
// readable, checkable prefix. Before, every later event printed its own
// error for the rest of the time limit and the run ended on results.json.
func TestFullDiskStopsTheRun(t *testing.T) {
	testslot.Parallel(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	// 2 MiB: the cluster starts (its files take about 0.1 MiB), and the history and the resource's WAL fill
	// it within the first seconds of the workload.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Fatalf("mount a 2 MiB tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	cfg := config(t, "baseline", func(c *Config) { c.TimeLimit = 30 * time.Second })
	cfg.Out = filepath.Join(dir, "run")
	start := time.Now()
	o := Run(context.Background(), cfg, testLog{t})
	took := time.Since(start)
	if o.ExitCode != exitcode.Crashed || o.Err == nil || !strings.Contains(o.Err.Error(), "no space left on device") {
		t.Fatalf("exit %d, err %v; want 255 naming the full disk", o.ExitCode, o.Err)
	}
	if took > 25*time.Second {
		t.Errorf("the run went on for %v after the disk filled (time limit 30 s)", took.Round(time.Second))
	}
	// The prefix is readable and checkable once copied where there is room.
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", cfg.Out, cp).CombinedOutput(); err != nil {
		t.Fatalf("copy the run folder: %v: %s", err, out)
	}
	ev, err := history.ReadFile(filepath.Join(cp, "history.jsonl"))
	if err != nil || len(ev) == 0 {
		t.Fatalf("history prefix: %d events, %v", len(ev), err)
	}
	if _, _, err := CheckDir(cp); err != nil {
		t.Errorf("check of the prefix: %v", err)
	}
	t.Logf("stopped after %v with %d events on disk: %v", took.Round(time.Millisecond), len(ev), o.Err)
	assertNoProcessesLeft(t, cfg.Out)
}
