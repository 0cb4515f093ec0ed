package runner

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// An explicit schedule is planned as asked: the listed faults at the listed
// offsets, config.json's faults naming them, the same on every Validate
// (bench scenario validates once per seed), and a run's recorded schedule
// given back planned to the same steps.
func TestValidateFaultsAt(t *testing.T) {
	sc, err := scenario.Get("failover-race")
	if err != nil {
		t.Fatal(err)
	}
	seeded := FromScenario(sc)
	if err := seeded.Validate(); err != nil {
		t.Fatal(err)
	}
	asked, err := nemesis.ParseFaultsAt("12.5s:kill-primary,3s:cut-replication")
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromScenario(sc)
	cfg.FaultsAt = asked
	for range 2 {
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		var got []nemesis.Step
		for _, s := range cfg.Schedule {
			got = append(got, nemesis.Step{At: s.At, Fault: s.Fault})
		}
		if !reflect.DeepEqual(got, asked) {
			t.Fatalf("schedule %v, want %v", cfg.Schedule, asked)
		}
		if !slices.Equal(cfg.Faults, []string{"cut-replication", "kill-primary"}) {
			t.Fatalf("faults %v, want the two --faults-at names", cfg.Faults)
		}
	}

	again := FromScenario(sc)
	for _, s := range seeded.Schedule {
		again.FaultsAt = append(again.FaultsAt, nemesis.Step{At: s.At, Fault: s.Fault})
	}
	if err := again.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Schedule, seeded.Schedule) {
		t.Fatalf("the recorded schedule given as --faults-at planned\n%v\nnot\n%v", again.Schedule, seeded.Schedule)
	}
}

func TestValidateFaultsAtRefuses(t *testing.T) {
	tests := []struct {
		scenario, at string
		mutate       func(*Config)
		want         string
	}{
		{"failover-race", "3s:redlock-clock-jump", nil, "--faults-at: the redlock-clock-jump fault needs --topology redlock"},
		{"failover-race", "3s:partition", nil, "--faults-at: the partition fault needs --runtime docker"},
		{"failover-race", "3s:kill-primary", func(c *Config) { c.Cluster.Replicas = 0 }, "--replicas 1 or more"},
		{"failover-race", "1s:cut-replication", nil, "--faults-at: 1s:cut-replication fires before the 3s warm-up"},
		{"failover-race", "30s:cut-replication", nil, "past --time-limit 25s"},
		{"failover-race", "3s:cut-replication", func(c *Config) { c.TimeLimit = 8 * time.Second }, "use --time-limit 11s or more"},
		{"failover-race", "3s:cut-replication", func(c *Config) { c.BackToBack = true }, "back-to-back"},
	}
	for _, tt := range tests {
		t.Run(tt.at, func(t *testing.T) {
			sc, err := scenario.Get(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cfg := FromScenario(sc)
			if cfg.FaultsAt, err = nemesis.ParseFaultsAt(tt.at); err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(&cfg)
			}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
}
