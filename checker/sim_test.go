package checker

import (
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/checkertest"
)

// The generator lives in internal/checkertest, which the shrink tests share;
// these names keep checker's tests reading as they did.
type (
	simConfig = checkertest.Config
	simItem   = checkertest.Item
	simQueue  = checkertest.Queue
)

const simStart = checkertest.Start

func simulate(cfg simConfig) ([]history.Event, []history.Attempt, *checkertest.Sim) {
	return checkertest.Simulate(cfg)
}
