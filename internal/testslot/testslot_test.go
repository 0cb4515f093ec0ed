package testslot

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestSlotsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{
		{"", DefaultSlots},
		{"5", 5},
		{"0", DefaultSlots},
		{"-2", DefaultSlots},
		{"two", DefaultSlots},
	} {
		t.Setenv(Env, tc.env)
		if got := Slots(); got != tc.want {
			t.Errorf("%s=%q: %d slots, want %d", Env, tc.env, got, tc.want)
		}
	}
}

// No more than n holders at once, and every waiter gets one in the end.
func TestTakeBoundsHolders(t *testing.T) {
	dir := t.TempDir()
	const n, workers = 2, 7
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := take(dir, n, 5*time.Millisecond, false)
			if err != nil {
				t.Error(err)
				return
			}
			r := running.Add(1)
			for {
				p := peak.Load()
				if r <= p || peak.CompareAndSwap(p, r) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond)
			running.Add(-1)
			f.Close()
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != n {
		t.Fatalf("peak holders %d, want %d", p, n)
	}
}

// A slot held by a process that is killed is free again: the kernel drops the
// flock with its last descriptor, so a SIGKILLed test binary blocks nobody.
func TestKilledHolderFreesItsSlot(t *testing.T) {
	dir := t.TempDir()
	// flock(1) is util-linux, on every Debian machine; --close keeps the lock
	// in flock itself, not in the sleep it starts, as a test binary opens its
	// slot close-on-exec.
	holder := exec.Command("flock", "--close", filepath.Join(dir, "slot-0"), "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	waitHeld(t, filepath.Join(dir, "slot-0"))
	done := make(chan error, 1)
	go func() {
		f, err := take(dir, 1, 5*time.Millisecond, false)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("took a slot another process holds")
	case <-time.After(300 * time.Millisecond):
	}
	holder.Process.Kill()
	holder.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the slot of a killed holder stayed taken")
	}
	if !strings.HasPrefix(Dir(), os.TempDir()) {
		t.Fatalf("slot folder %s outside %s", Dir(), os.TempDir())
	}
}

// waitHeld returns once another process holds the flock on path.
func waitHeld(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if err != nil {
			return
		}
	}
	t.Fatalf("flock(1) never took %s", path)
}

// A long taker is served before the takers that waited longer: with the one
// slot held, a plain taker waits first, then a long one; the slot goes to the
// long one when it frees.
func TestLongTakerServedFirst(t *testing.T) {
	dir := t.TempDir()
	held, err := take(dir, 1, 5*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	go func() {
		f, err := take(dir, 1, 5*time.Millisecond, false)
		if err == nil {
			order <- "plain"
			time.Sleep(20 * time.Millisecond)
			f.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	go func() {
		f, err := take(dir, 1, 5*time.Millisecond, true)
		if err == nil {
			order <- "long"
			time.Sleep(20 * time.Millisecond)
			f.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	held.Close()
	for _, want := range []string{"long", "plain"} {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("%s taker served first, want the long one", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s taker served", want)
		}
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "long-*")); len(ms) != 0 {
		t.Fatalf("markers left: %v", ms)
	}
}

// A marker whose owner died (its flock free) holds nobody up.
func TestStaleLongMarkerIsIgnored(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "long-dead"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := take(dir, 1, 5*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(dir, "long-dead")); !os.IsNotExist(err) {
		t.Fatalf("stale marker kept: %v", err)
	}
}

// A package's slot counts against the bound like a test's, and its release
// gives it back to a waiter.
func TestPackageHoldsASlotUntilReleased(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // a private slot folder
	t.Setenv(Env, "1")
	release, err := Package()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := Package()
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("a second package took the only slot while the first held it")
	case <-time.After(300 * time.Millisecond):
	}
	release()
	select {
	case r := <-got:
		r()
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting package got no slot after the first gave it back")
	}
}

// A heavy test holds two slots: with three, one more test runs beside it,
// not two; and two heavy takers never deadlock on a partial hold.
func TestHeavyHoldsTwoSlots(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // a private slot folder
	t.Setenv(Env, "3")
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run("heavy", func(t *testing.T) {
				holdN(t, false, 2)
				n := running.Add(2)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(50 * time.Millisecond)
				running.Add(-2)
			})
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("peak %d slots held by heavy tests at once with 3 slots, want 2 (one heavy at a time)", p)
	}
}

// A test alone holds every slot: while it holds them, no other test holds
// one, and the others all run once it is done.
func TestAloneHoldsEverySlot(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // a private slot folder
	t.Setenv(Env, "3")
	var alone atomic.Bool
	var others, overlap atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.Run("alone", func(t *testing.T) {
			holdN(t, false, Slots())
			alone.Store(true)
			if others.Load() > 0 {
				overlap.Add(1)
			}
			time.Sleep(200 * time.Millisecond)
			alone.Store(false)
		})
	}()
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run("single", func(t *testing.T) {
				hold(t, false)
				others.Add(1)
				if alone.Load() {
					overlap.Add(1)
				}
				time.Sleep(50 * time.Millisecond)
				others.Add(-1)
			})
		}()
	}
	wg.Wait()
	if n := overlap.Load(); n != 0 {
		t.Errorf("%d time(s) a test held a slot while the alone test held every slot", n)
	}
}
