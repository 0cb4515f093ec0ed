package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/metrics"
	"github.com/lockjepsen/lockjepsen/runfolder"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads the endpoint and returns every sample as "name{l="v",...}"
// -> value; a histogram gives its _count.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "lockjepsen_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[strings.Replace(key, "{", "_count{", 1)] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

// The metrics endpoint of a real run, scraped while the workload runs and
// after it ends (--metrics-linger keeps it up), agrees with the history the
// run wrote, and with the metrics key of results.json.
func TestMetricsEndpointMatchesHistory(t *testing.T) {
	testslot.Parallel(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(exe, "run", "--scenario", "baseline", "--time-limit", "8s",
		"--metrics-addr", "127.0.0.1:0", "--metrics-linger", "2m", "--out", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()

	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(3 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before %q; stderr: %s", prefix, stderr.String())
				}
				if strings.Contains(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q within 3 minutes", prefix)
			}
		}
	}
	const okKey = `lockjepsen_acquires_total{outcome="ok",reason=""}`
	first := next("metrics: http://")
	url := strings.TrimSpace(strings.TrimPrefix(first, "metrics: "))

	// Scrape every 300 ms while the run goes on; counters never go back.
	var mu sync.Mutex
	var live []float64
	stopScrapes := make(chan struct{})
	scrapesDone := make(chan struct{})
	go func() {
		defer close(scrapesDone)
		prev := map[string]float64{}
		for {
			select {
			case <-stopScrapes:
				return
			case <-time.After(300 * time.Millisecond):
			}
			s, err := scrape(url)
			if err != nil {
				t.Errorf("scrape during the run: %v", err)
				return
			}
			for k, v := range s {
				if strings.HasSuffix(strings.SplitN(k, "{", 2)[0], "_total") && v < prev[k] {
					t.Errorf("%s went back from %v to %v", k, prev[k], v)
				}
			}
			prev = s
			mu.Lock()
			live = append(live, s[okKey])
			mu.Unlock()
		}
	}()
	next("heal:") // the workload is over
	close(stopScrapes)
	<-scrapesDone
	next("stays up") // checked, reported; the endpoint lingers
	final, err := scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v (a clean baseline exits 0); stderr: %s", err, stderr.String())
	}

	// Live: some scrape during the workload saw acquires, fewer than the end.
	mu.Lock()
	sawLive := false
	for _, v := range live {
		if v > 0 && v < final[okKey] {
			sawLive = true
		}
	}
	mu.Unlock()
	if !sawLive {
		t.Errorf("no scrape during the workload saw it under way: %v, final %v", live, final[okKey])
	}

	// The history, counted here independently of the collector.
	events, err := history.ReadFile(filepath.Join(out, runfolder.History))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, k := range []string{okKey, `lockjepsen_acquires_total{outcome="info",reason=""}`} {
		want[k] = 0
	}
	for _, r := range history.RefusalReasons {
		want[fmt.Sprintf(`lockjepsen_acquires_total{outcome="fail",reason=%q}`, r)] = 0
	}
	inv := map[history.Process]history.Event{}
	granted := map[string]bool{}
	var holds, acquires, mismatches, renewFails, rejections, releases float64
	for _, e := range events {
		if !e.IsClient() {
			continue
		}
		if e.Type == history.Invoke {
			inv[e.Process] = e
			if e.F == history.FRelease && granted[e.Token] {
				holds++
				delete(granted, e.Token)
			}
			continue
		}
		i := inv[e.Process]
		delete(inv, e.Process)
		switch i.F {
		case history.FAcquire:
			acquires++
			reason := ""
			if e.Type == history.Fail {
				reason = history.RefusalReason(e.Error)
			}
			if e.Type == history.OK {
				granted[i.Token] = true
			}
			want[fmt.Sprintf(`lockjepsen_acquires_total{outcome=%q,reason=%q}`, e.Type, reason)]++
		case history.FRelease:
			releases++
			if e.Type == history.Fail && history.SaysNotHeld(e.Error) {
				mismatches++
			}
		case history.FExtend:
			if e.Type != history.OK {
				renewFails++
			}
		case history.FRead, history.FWrite:
			if e.Verdict == "rejected" {
				rejections++
			}
		}
	}
	if want[okKey] < 50 || releases < 50 || want[`lockjepsen_acquires_total{outcome="fail",reason="contention"}`] == 0 {
		t.Fatalf("too little happened to compare: %v, %v releases", want, releases)
	}
	var latencyCount float64
	for _, o := range metrics.Outcomes {
		latencyCount += final[fmt.Sprintf(`lockjepsen_acquire_latency_seconds_count{outcome=%q}`, o)]
	}
	want[`lockjepsen_unlock_mismatches_total{}`] = mismatches
	checks := map[string][2]float64{
		"acquire latency samples": {latencyCount, acquires},
		"hold samples":            {final[`lockjepsen_hold_seconds_count{}`], holds},
		"renew failures":          {final[`lockjepsen_renew_failures_total{outcome="fail"}`] + final[`lockjepsen_renew_failures_total{outcome="info"}`], renewFails},
		"fence rejections":        {final[`lockjepsen_fence_rejections_total{op="read"}`] + final[`lockjepsen_fence_rejections_total{op="write"}`], rejections},
		"failovers":               {final[`lockjepsen_failovers_total{}`], 0},
		"double grants seen":      {final[`lockjepsen_double_grants_seen_total{}`], 0},
	}
	for k, v := range want {
		if got, ok := final[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), history says %v", k, got, ok, v)
		}
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: endpoint %v, history %v", name, c[0], c[1])
		}
	}
	if final[`lockjepsen_run_info{cell="",fence="read-write",recipe="native",scenario="baseline"}`] != 1 {
		t.Errorf("no run info: %v", final)
	}

	// results.json's metrics key: the same figures, replayed from the file.
	b, err := os.ReadFile(filepath.Join(out, runfolder.Results))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Metrics *metrics.Summary `json:"metrics"`
		Valid   json.RawMessage  `json:"valid"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Metrics == nil {
		t.Fatalf("results.json has no metrics key (%v)", err)
	}
	m := res.Metrics
	t.Logf("endpoint: %d live scrapes, final acquires ok %v; history: %v acquires, %v releases, %v holds; results.json: %+v",
		len(live), final[okKey], acquires, releases, holds, *m)
	if string(res.Valid) != "true" {
		t.Errorf("results.json valid %s, want true", res.Valid)
	}
	if float64(m.Acquires.OK) != final[okKey] || float64(m.Acquires.Fail+m.Acquires.Info+m.Acquires.OK) != acquires ||
		float64(m.HoldMs.Count) != holds || float64(m.UnlockMismatches) != mismatches ||
		float64(m.RenewFailures) != renewFails || float64(m.FenceRejections) != rejections || m.DoubleGrantsSeen != 0 {
		t.Errorf("results.json metrics %+v disagree with the endpoint / history", *m)
	}
	if m.AcquireLatencyMs["ok"].P50 <= 0 || m.AcquireLatencyMs["ok"].P99 < m.AcquireLatencyMs["ok"].P50 || m.HoldMs.P50 <= 0 {
		t.Errorf("percentiles: %+v, hold %+v", m.AcquireLatencyMs, m.HoldMs)
	}
	assertNoProcessesLeft(t, out)
}
