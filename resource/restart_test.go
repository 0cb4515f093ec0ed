package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv carries a Config to a copy of the test binary that serves it, so the
// restart test can SIGKILL a real service process, as the nemesis would.
const childEnv = "LOCKJEPSEN_RESOURCE_TEST_CHILD"

type childSpec struct {
	Config    Config
	ReadyFile string
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(serveChild(spec))
	}
	os.Exit(m.Run())
}

func serveChild(spec string) int {
	var cs childSpec
	if err := json.Unmarshal([]byte(spec), &cs); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	svc, err := Start(ctx, cs.Config, "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := WriteReadyFile(cs.ReadyFile, svc.Addr()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	<-ctx.Done()
	if err := svc.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// spawn starts a service process for cfg and returns it with a client.
func spawn(t *testing.T, cfg Config) (*exec.Cmd, *Client) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	spec, err := json.Marshal(childSpec{Config: cfg, ReadyFile: ready})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(ready); err == nil {
			c := NewClient(strings.TrimSpace(string(b)))
			t.Cleanup(c.Close)
			return cmd, c
		}
	}
	t.Fatal("service process wrote no ready file in 20s")
	return nil, nil
}

// TestRestartKeepsData: the service is killed without warning (SIGKILL) and
// started again on the same database; the value, last_fence and last_token are
// still there, so a stale holder is still turned away and the holder that set
// last_fence can continue. A graceful stop (SIGTERM) keeps them too.
func TestRestartKeepsData(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b.name), func(t *testing.T) {
			cfg := b.fresh(t, ModeReadWrite)
			cfg.Runs = []string{"job-1"}
			ctx := ctxT(t)
			holder := func(f int64) Holder {
				return Holder{RunID: "job-1", Client: int(f), Process: int(f), Token: fmt.Sprintf("token-%d", f), Fence: f}
			}

			cmd, c := spawn(t, cfg)
			for f := int64(1); f <= 5; f++ {
				r, err := c.Read(ctx, holder(f))
				if err == nil {
					r, err = c.Write(ctx, holder(f), r.Value+1)
				}
				if err != nil || !r.Accepted() {
					t.Fatalf("section with fence %d: %+v %v", f, r, err)
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			cmd, c = spawn(t, cfg)
			row := mustRow(t)(c.Row(ctx, "job-1"))
			if row.Value != 5 || row.LastFence != 5 || row.LastToken != "token-5" {
				t.Fatalf("after SIGKILL and restart: %+v; want value 5, last_fence 5, last_token token-5", row)
			}
			checks := []struct {
				h      Holder
				accept bool
				reason string
			}{
				{holder(3), false, "fence 3 is older than last_fence 5"},
				{Holder{RunID: "job-1", Client: 9, Process: 9, Token: "other", Fence: 5}, false, "fence 5 was already used by another holder (token token-5)"},
				{holder(5), true, ""}, // the holder of 5 continuing across the restart
			}
			for _, ck := range checks {
				r, err := c.Write(ctx, ck.h, 6)
				if err != nil || r.Accepted() != ck.accept || !strings.Contains(r.Reason, ck.reason) {
					t.Errorf("write fence %d token %s after restart: %+v %v; want accepted=%v %q", ck.h.Fence, ck.h.Token, r, err, ck.accept, ck.reason)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("service did not stop cleanly on SIGTERM: %v", err)
			}

			_, c = spawn(t, cfg)
			if row := mustRow(t)(c.Row(ctx, "job-1")); row.Value != 6 || row.LastFence != 5 {
				t.Fatalf("after SIGTERM and restart: %+v; want value 6, last_fence 5", row)
			}
			var buf strings.Builder
			if _, err := c.ExportAttempts(ctx, &buf, "job-1"); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(buf.String(), "\n"); n != 13 {
				t.Fatalf("attempts log holds %d attempts after two restarts; want 13", n)
			}
		})
	}
}
