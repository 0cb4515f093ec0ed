// Package testslot bounds how many end-to-end tests run at once on one machine,
// across every test binary of a `go test -p N` run.
//
// The end-to-end tests start real clusters and mostly wait: down-after
// periods, TTLs, heal settles. One after another (`-p 1`, no t.Parallel) they
// kept 2 cores about half busy and CI took 52 minutes. Run side by side
// without a bound, a package's dozen scenarios would starve each other of CPU
// and a failover that takes 5 s idle would take 20: the timers the scenarios
// assert on assume a machine that keeps up. So each end-to-end test first takes
// one of Slots() slots, an flock on a file in a folder every test binary on the
// machine shares: the kernel drops a lock with its holder, so a test binary
// that is killed leaves no slot taken, and packages that `go test` runs as
// separate processes share one bound.
package testslot

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Env names the variable that sets the number of slots.
const Env = "LOCKJEPSEN_TEST_SLOTS"

// DefaultSlots is the bound on 2 cores: measured in docs/development.md.
const DefaultSlots = 3

// Slots is the number of end-to-end tests that may run at once: $LOCKJEPSEN_TEST_SLOTS
// when it is a positive number, else DefaultSlots.
func Slots() int {
	if n, err := strconv.Atoi(os.Getenv(Env)); err == nil && n > 0 {
		return n
	}
	return DefaultSlots
}

// Dir is the folder the slot files live in, shared by every test binary run by one user.
func Dir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("lockjepsen-test-slots-%d", os.Getuid()))
}

// Parallel marks t parallel (t.Parallel) and then blocks until one of Slots()
// slots is free, holding it until t and its cleanups end. Call it first in a
// leaf test that starts a deployment or a run: a test that holds a slot and
// waits for subtests that want one could wait for ever.
func Parallel(t testing.TB) {
	t.Helper()
	if p, ok := t.(interface{ Parallel() }); ok {
		p.Parallel()
	}
	Hold(t)
}

// ParallelLong is Parallel for a test that holds its slot for minutes: it is
// served before every test waiting with Parallel. Measured: the workshop's
// five-minute lab test, served in turn, got its slot 12 minutes into the
// package runs and ran alone for its last 5; the suite's end is bounded by
// when its longest test starts.
func ParallelLong(t testing.TB) {
	t.Helper()
	if p, ok := t.(interface{ Parallel() }); ok {
		p.Parallel()
	}
	hold(t, true)
}

// ParallelHeavy is Parallel for a test that loads the machine like two
// scenarios: a run whose clients are real programs forking a process per
// operation (the examples' shell adapter: bash and valkey-cli for each
// acquire). It takes two slots. Measured: beside two other scenarios, at a
// load average of 7-8 on 2 cores, that adapter's acquires took 655 ms at
// the median and its baseline saw 22 grants in 10 s, where an idle machine
// gives it the 50 its test asks for.
func ParallelHeavy(t testing.TB) {
	t.Helper()
	if p, ok := t.(interface{ Parallel() }); ok {
		p.Parallel()
	}
	holdN(t, false, 2)
}

// ParallelAlone is Parallel for a test whose assertion counts the work done
// in a fixed time by a heavy run: it takes every slot, so that no other
// scenario runs beside it. Measured: the examples' shell-adapter baseline,
// which asks for 50 grants in 10 s and gets 300-450 on an idle machine, saw
// 31 and 34 with two slots beside one other scenario (acquire p50 609-616
// ms), where 16 busy loops beside it still leave it 123 (p50 211 ms): other
// scenarios' many short-lived processes and timers cost it more than plain
// CPU load does. Other tests wait for it while it runs, so keep it short.
func ParallelAlone(t testing.TB) {
	t.Helper()
	if p, ok := t.(interface{ Parallel() }); ok {
		p.Parallel()
	}
	holdN(t, false, Slots())
}

// Hold takes a slot for t without marking it parallel: for a test that must
// run alone in its binary (it changes process-wide state) but may run beside
// other binaries' tests.
func Hold(t testing.TB) {
	t.Helper()
	hold(t, false)
}

func hold(t testing.TB, long bool) {
	t.Helper()
	holdN(t, long, 1)
}

// holdN takes n slots (at most Slots()). A taker of more than one takes
// them under an exclusive lock on a file of the slot folder, so that two
// such takers never each hold part of what the other waits for.
func holdN(t testing.TB, long bool, n int) {
	t.Helper()
	start := time.Now()
	n = min(n, Slots())
	var heavy *os.File
	if n > 1 {
		var err error
		if heavy, err = lockFile(filepath.Join(Dir(), "heavy")); err != nil {
			t.Fatalf("take test slots: %v", err)
		}
	}
	var names []string
	for range n {
		f, err := take(Dir(), Slots(), 100*time.Millisecond, long)
		if err != nil {
			t.Fatalf("take a test slot: %v", err)
		}
		names = append(names, filepath.Base(f.Name()))
		// Registered now, so it runs after every cleanup registered later by
		// the test (a deployment's Down): the slot is given back once the
		// test's processes are gone, not while they are being stopped.
		t.Cleanup(func() { f.Close() })
	}
	if heavy != nil {
		heavy.Close()
	}
	// The CI summary (scripts/testtimes) takes this wait off the test's
	// elapsed time, so its table ranks tests by the minutes they cost.
	t.Logf("testslot: %s after %.1fs", strings.Join(names, "+"), time.Since(start).Seconds())
}

// lockFile opens path and blocks until it holds an exclusive flock on it.
func lockFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("slot folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// Package takes a slot for a whole test binary, from its TestMain, and
// returns what gives it back: for a package whose tests share one deployment
// started there (clustertest.Start), which is an end-to-end test in all but
// name. Without one, the workload package's cluster and clients ran beside
// three slotted scenarios and a redsync client saw 5 acquires time out at
// 1 s in a run without faults (a fresh-clone CI run).
func Package() (release func(), err error) {
	f, err := take(Dir(), Slots(), 100*time.Millisecond, false)
	if err != nil {
		return nil, fmt.Errorf("take a test slot: %w", err)
	}
	return func() { f.Close() }, nil
}

// take returns an open, flocked slot file of dir, polling every poll until
// one of n is free. A long taker first leaves a marker, flocked for as long
// as it waits, and the others take no slot while a live marker is there.
func take(dir string, n int, poll time.Duration, long bool) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("slot folder: %w", err)
	}
	if long {
		m, name, err := mark(dir)
		if err != nil {
			return nil, err
		}
		defer func() { os.Remove(name); m.Close() }()
	}
	for {
		if !long && longWaiting(dir) {
			time.Sleep(poll)
			continue
		}
		for i := 0; i < n; i++ {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("slot-%d", i)), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				return nil, fmt.Errorf("slot file: %w", err)
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
				return f, nil
			}
			f.Close()
		}
		time.Sleep(poll)
	}
}

// mark leaves a long taker's marker: flocked under a temporary name first,
// then renamed, so that no one finds it unlocked and takes it for stale.
func mark(dir string) (*os.File, string, error) {
	f, err := os.CreateTemp(dir, "tmp-long-")
	if err != nil {
		return nil, "", fmt.Errorf("long taker's marker: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", fmt.Errorf("lock the long taker's marker: %w", err)
	}
	name := filepath.Join(dir, "long-"+strings.TrimPrefix(filepath.Base(f.Name()), "tmp-long-"))
	if err := os.Rename(f.Name(), name); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", fmt.Errorf("name the long taker's marker: %w", err)
	}
	return f, name, nil
}

// longWaiting reports whether a long taker waits; a marker whose owner died
// (its flock is free) is removed.
func longWaiting(dir string) bool {
	ms, _ := filepath.Glob(filepath.Join(dir, "long-*"))
	waiting := false
	for _, m := range ms {
		f, err := os.Open(m)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			waiting = true
		} else {
			os.Remove(m)
		}
		f.Close()
	}
	return waiting
}
