package workload

import (
	"context"
	"testing"
	"time"
)

func TestClockSkew(t *testing.T) {
	c := NewClock()
	before := c.Now()
	c.Set(10*time.Second, 0)
	if d := c.Now() - before; d < int64(10*time.Second) || d > int64(11*time.Second) {
		t.Fatalf("offset +10s moved the clock by %v", time.Duration(d))
	}
	c.Set(0, 2)
	a := c.Now()
	time.Sleep(50 * time.Millisecond)
	if d := time.Duration(c.Now() - a); d < 95*time.Millisecond {
		t.Fatalf("rate 2 advanced %v in 50ms of true time", d)
	}
}

// A sleeper recomputes its deadline when the clock jumps: a forward step of
// the offset ends a long sleep at once.
func TestClockSleepWakesOnJump(t *testing.T) {
	c := NewClock()
	done := make(chan error, 1)
	go func() { done <- c.SleepUntil(context.Background(), c.Now()+int64(time.Hour)) }()
	time.Sleep(20 * time.Millisecond)
	c.Set(2*time.Hour, 0)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("sleeper did not wake after the clock jumped past its deadline")
	}
}

func TestRunID(t *testing.T) {
	for in, want := range map[string]string{"lock:{job-1}": "job-1", "plain": "plain"} {
		if got := RunID(in); got != want {
			t.Errorf("RunID(%q) = %q, want %q", in, got, want)
		}
	}
}
