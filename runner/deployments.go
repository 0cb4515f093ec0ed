package runner

// The deployments that live in folders of their own (a deployment, its
// runtime, faults and scenarios, registered from init) join every program
// that runs, sweeps or documents runs through this one import.
import (
	_ "github.com/lockjepsen/lockjepsen/deployments/etcd"
	_ "github.com/lockjepsen/lockjepsen/deployments/postgres"
	_ "github.com/lockjepsen/lockjepsen/deployments/redlock"
	_ "github.com/lockjepsen/lockjepsen/deployments/sentinel"
	_ "github.com/lockjepsen/lockjepsen/deployments/standalone"
	_ "github.com/lockjepsen/lockjepsen/deployments/valkeycluster"
	_ "github.com/lockjepsen/lockjepsen/deployments/zookeeper"
)
