package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

// finding is one side (before or after its fix) of an entry in
// results/findings: the command its README gives, and the lock verdict that
// command gave on 10 of 10 seeds before it was asserted here.
type finding struct {
	folder string
	side   string
	// pin is the MODULE@VERSION and build tags of scripts/pinned-build.sh,
	// "" for this build.
	pin, tags string
	args      []string // after `lockjepsen`
	lock      checker.Validity
	// holders: the finding's harm is two clients acting as holder at
	// once, whichever way the checker files it (a double grant, or, when
	// the older lease's reported end came first, a slow holder): before
	// wants at least one such moment, after none and a valid run.
	holders bool
}

var findings = []finding{
	{folder: "002-redsync-126-shared-value", side: "before",
		args: []string{"run", "--scenario", "baseline", "--recipe", "redsync-shared-value", "--fence", "none", "--time-limit", "5s"},
		lock: checker.Invalid},
	{folder: "002-redsync-126-shared-value", side: "after",
		args: []string{"run", "--scenario", "baseline", "--recipe", "redsync", "--fence", "none", "--time-limit", "5s"},
		lock: checker.Valid},
	{folder: "003-redsync-151-extend-cleanup", side: "before",
		pin: "github.com/go-redsync/redsync/v4@v4.12.0", tags: "redsync_goredis",
		args: []string{"run", "--scenario", "failover-race", "--topology", "redlock", "--recipe", "redsync", "--fence", "none", "--faults", "crash-node"},
		lock: checker.Invalid},
	{folder: "003-redsync-151-extend-cleanup", side: "after",
		pin: "github.com/go-redsync/redsync/v4@v4.12.1", tags: "redsync_goredis",
		args: []string{"run", "--scenario", "failover-race", "--topology", "redlock", "--recipe", "redsync", "--fence", "none", "--faults", "crash-node"},
		lock: checker.Valid},
	// valkey-go's go.mod since v1.0.77 is required by valkeycompat and by
	// redsync v4.17.0's valkeygo adapter: both sides drop the one and build
	// redsync v4.15.0 over go-redis, so that only valkey-go differs.
	{folder: "008-valkey-go-923-renewal-drift", side: "before",
		pin: "github.com/valkey-io/valkey-go@v1.0.69," + valkeyGoPinRest, tags: "redsync_goredis",
		args: []string{"run", "--scenario", "renewal-drift"},
		lock: checker.Invalid, holders: true},
	{folder: "008-valkey-go-923-renewal-drift", side: "after",
		pin: "github.com/valkey-io/valkey-go@v1.0.70," + valkeyGoPinRest, tags: "redsync_goredis",
		args: []string{"run", "--scenario", "renewal-drift"},
		lock: checker.Valid, holders: true},
}

const valkeyGoPinRest = "github.com/go-redsync/redsync/v4@v4.15.0,-github.com/valkey-io/valkey-go/valkeycompat"

// pinnedBuilds builds each pinned binary once for the whole package.
var pinnedBuilds sync.Map // pin → func() (string, error)

func pinnedExe(t *testing.T, pin, tags string) string {
	t.Helper()
	if pin == "" {
		return exe
	}
	f, _ := pinnedBuilds.LoadOrStore(pin, sync.OnceValues(func() (string, error) {
		out := filepath.Join(filepath.Dir(exe), "lockjepsen-"+strings.NewReplacer("/", "-", "@", "-").Replace(pin))
		b, err := exec.Command("../scripts/pinned-build.sh", pin, out, tags).CombinedOutput()
		if err != nil {
			return "", &buildError{pin, string(b), err}
		}
		return out, nil
	}))
	path, err := f.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

type buildError struct {
	pin, out string
	err      error
}

func (e *buildError) Error() string {
	return "pinned build " + e.pin + ": " + e.err.Error() + "\n" + e.out
}

// Each finding's README command gives the verdict its README states, before
// the fix and after, and the README quotes the command this test runs.
func TestFindings(t *testing.T) {
	t.Parallel()
	for _, f := range findings {
		t.Run(f.folder+"/"+f.side, func(t *testing.T) {
			readme, err := os.ReadFile(filepath.Join("..", "results", "findings", f.folder, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if cmd := strings.Join(f.args, " "); !strings.Contains(string(readme), cmd) {
				t.Fatalf("%s/README.md does not give the command this test runs: %s", f.folder, cmd)
			}
			if f.pin != "" && !strings.Contains(string(readme), f.pin) {
				t.Fatalf("%s/README.md does not name the pin %s", f.folder, f.pin)
			}
			bin := pinnedExe(t, f.pin, f.tags)
			testslot.Parallel(t)
			out := filepath.Join(t.TempDir(), "run")
			cmd := exec.Command(bin, append(f.args, "--out", out)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			b, _ := cmd.CombinedOutput()
			rb, err := os.ReadFile(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatalf("no results.json (%v):\n%s", err, b)
			}
			var r checker.Result
			if err := json.Unmarshal(rb, &r); err != nil {
				t.Fatal(err)
			}
			switch {
			case f.holders && f.lock == checker.Invalid:
				if r.DoubleHolders == 0 {
					t.Fatalf("%s %s: no two clients acted as holder at once\n%s", f.folder, f.side, b)
				}
			case f.holders && (r.DoubleHolders != 0 || r.Valid != checker.Valid):
				t.Fatalf("%s %s: %d moments of two holders, verdict %v; want none, valid\n%s\n%s", f.folder, f.side, r.DoubleHolders, r.Valid, b, unexplained(out, &r))
			case !f.holders && r.Lock.Valid != f.lock:
				t.Fatalf("%s %s: lock %v, want %v\n%s\n%s", f.folder, f.side, r.Lock.Valid, f.lock, b, unexplained(out, &r))
			}
			assertNoProcessesLeft(t, out)
		})
	}
}
