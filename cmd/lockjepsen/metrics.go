package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/metrics"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/sweep"
)

// metricsOpts are the --metrics-addr and --metrics-linger flags of run and
// sweep.
type metricsOpts struct {
	addr   string
	linger time.Duration
}

func (m *metricsOpts) register(fs *flag.FlagSet) {
	fs.Func("metrics-addr", "serve Prometheus metrics on HOST:PORT/metrics during the run (port 0: any free port; off by default)", func(v string) error {
		if err := metrics.CheckAddr(v); err != nil {
			return err
		}
		m.addr = v
		return nil
	})
	// A negative linger was taken as none: refused, as every duration flag.
	fs.Var(knob.Duration{D: &m.linger, Min: 0}, "metrics-linger", "with --metrics-addr: keep the endpoint up this long after the end, for a last scrape (Ctrl-C ends it)")
}

// start binds the endpoint before anything else starts; a busy or bad
// address is one line naming the flag, exit 254. Without --metrics-addr it
// returns nils, which the runner and Close accept.
func (m *metricsOpts) start(cmd string) (*metrics.Server, *metrics.Collector, int, bool) {
	if m.addr == "" {
		return nil, nil, 0, true
	}
	c := metrics.New(nemesis.Catalog())
	s, err := metrics.Listen(m.addr, c)
	if err != nil {
		return nil, nil, fail("%s: --metrics-addr %s: %v", cmd, m.addr, err), false
	}
	fmt.Printf("metrics: %s\n", s.URL())
	return s, c, 0, true
}

// stop keeps the endpoint up for --metrics-linger (or until ctx ends), then
// shuts it down.
func (m *metricsOpts) stop(ctx context.Context, s *metrics.Server) {
	if s == nil {
		return
	}
	if m.linger > 0 && ctx.Err() == nil {
		fmt.Printf("metrics: %s stays up for %v (Ctrl-C ends it)\n", s.URL(), m.linger)
		select {
		case <-ctx.Done():
		case <-time.After(m.linger):
		}
	}
	_ = s.Close()
}

func runInfo(cfg runner.Config) metrics.Info {
	return metrics.Info{Scenario: cfg.Scenario, Recipe: cfg.Recipe, Fence: cfg.Fence}
}

// trialInfo names a sweep trial by its folder, <sweep>/trials/<cell>/<n>.
func trialInfo(dir string, cfg runner.Config) metrics.Info {
	info := runInfo(cfg)
	if rel, err := filepath.Rel(filepath.Join(dir, sweep.Trials), cfg.Out); err == nil {
		info.Cell = filepath.Dir(rel)
		info.Trial, _ = strconv.Atoi(filepath.Base(rel))
	}
	return info
}
