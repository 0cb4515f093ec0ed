package checker

import (
	"encoding/json"
	"fmt"
	"time"
)

// ConfigKeys are the keys of a run's config.json that a check reads
// (docs/checker.md, "lockjepsen check DIR"): the "check" object's epsilon_ms
// and budget_s, and epsilon_ns, the --epsilon that `lockjepsen run` records.
// Nothing else in config.json changes the verdict. They live here, beside
// Options, so that every command that re-judges a stored run (check, shrink)
// reads them with one precedence.
type ConfigKeys struct {
	Check struct {
		EpsilonMs *float64 `json:"epsilon_ms"`
		BudgetS   *float64 `json:"budget_s"`
	} `json:"check"`
	EpsilonNs *int64 `json:"epsilon_ns"`
}

// ReadConfigKeys decodes config.json's check keys; nil or empty b (no
// config.json) gives none.
func ReadConfigKeys(b []byte) (ConfigKeys, error) {
	var k ConfigKeys
	if len(b) == 0 {
		return k, nil
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("check keys: %w", err)
	}
	return k, nil
}

// Epsilon is the flag, else check.epsilon_ms, else epsilon_ns, else the default.
func (k ConfigKeys) Epsilon(flag time.Duration) time.Duration {
	switch {
	case flag != 0:
		return flag
	case k.Check.EpsilonMs != nil:
		return time.Duration(*k.Check.EpsilonMs * float64(time.Millisecond))
	case k.EpsilonNs != nil:
		return time.Duration(*k.EpsilonNs)
	}
	return DefaultEpsilon
}

// Budget is the flag, else check.budget_s, else the default.
func (k ConfigKeys) Budget(flag time.Duration) time.Duration {
	switch {
	case flag > 0:
		return flag
	case k.Check.BudgetS != nil && *k.Check.BudgetS > 0:
		return time.Duration(*k.Check.BudgetS * float64(time.Second))
	}
	return DefaultBudget
}
