package sweep

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// bar is the sweep's progress line: trials done of total, the trials in
// flight, double grants so far, elapsed time and the ETA. The ETA uses the
// mean wall time of the trials this invocation ran (a resumed sweep's old
// trials ran on another day), divided by --parallel.
type bar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	total    int
	done     int
	skipped  int // finished before this invocation
	parallel int
	grants   int
	opps     int
	began    time.Time
	spent    time.Duration // wall time of trials finished in this invocation
	ran      int
	flight   map[string]time.Time
}

func newBar(w io.Writer, tty bool, total, parallel int) *bar {
	return &bar{w: w, tty: tty, total: total, parallel: parallel, flight: map[string]time.Time{}}
}

func (b *bar) start() (stop func()) {
	b.began = time.Now()
	if b.w == nil {
		return func() {}
	}
	fmt.Fprintf(b.w, "sweep: %d trial(s) planned, %d already done, %d at a time\n", b.total, b.done, b.parallel)
	if !b.tty {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				b.draw()
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
		b.draw()
		fmt.Fprintln(b.w)
	}
}

// grow counts one more planned trial (--min-failovers adds them as it goes).
func (b *bar) grow() {
	b.mu.Lock()
	b.total++
	b.mu.Unlock()
}

func (b *bar) begin(j job) {
	b.mu.Lock()
	b.flight[fmt.Sprintf("%s#%d", j.cell.ID(), j.n)] = time.Now()
	b.mu.Unlock()
}

func (b *bar) end(j job) {
	b.mu.Lock()
	delete(b.flight, fmt.Sprintf("%s#%d", j.cell.ID(), j.n))
	b.mu.Unlock()
}

// finished counts a trial; the caller holds no bar lock.
func (b *bar) finished(t *Trial) {
	b.mu.Lock()
	b.done++
	b.ran++
	b.spent += time.Duration(t.Record.WallS * float64(time.Second))
	b.grants += t.DoubleGrants
	b.opps += t.Opportunities
	line := ""
	if !b.tty && b.w != nil {
		line = fmt.Sprintf("[%d/%d] %s #%d %s: %d %s(s), %d double grant(s), %.0fs   %s",
			b.done, b.total, t.Record.Cell, t.Record.Trial, t.Record.Status, t.Opportunities, t.Unit,
			t.DoubleGrants, t.Record.WallS, b.eta())
	}
	b.mu.Unlock()
	if line != "" {
		fmt.Fprintln(b.w, line)
	}
}

// eta is called with b.mu held.
func (b *bar) eta() string {
	el := time.Since(b.began).Round(time.Second)
	if b.ran == 0 {
		return fmt.Sprintf("elapsed %v, ETA after the first trial", el)
	}
	mean := b.spent / time.Duration(b.ran)
	left := b.total - b.done
	eta := time.Duration(float64(mean) * float64(left) / float64(b.parallel)).Round(time.Second)
	return fmt.Sprintf("elapsed %v, ETA %v (%.0fs/trial)", el, eta, mean.Seconds())
}

func (b *bar) draw() {
	b.mu.Lock()
	defer b.mu.Unlock()
	const width = 30
	frac := 0.0
	if b.total > 0 {
		frac = float64(b.done) / float64(b.total)
	}
	n := int(frac * width)
	var fl []string
	for k, t := range b.flight {
		fl = append(fl, fmt.Sprintf("%s %.0fs", k, time.Since(t).Seconds()))
	}
	sort.Strings(fl)
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d trials  %d double grant(s) in %d opportunities  %s  %s\x1b[K",
		strings.Repeat("#", n), strings.Repeat(".", width-n), b.done, b.total, b.grants, b.opps, b.eta(), strings.Join(fl, ", "))
}
