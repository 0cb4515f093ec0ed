package cluster

import "context"

// roleSentinel is the Sentinels' kind as deployments/sentinel registers it
// (deployments_test.go links that folder into this package's tests).
const roleSentinel Role = "sentinel"

// sentinelPrimary asks the Sentinel at addr through the registered kind.
func sentinelPrimary(ctx context.Context, l *Local, addr string) (string, error) {
	return watcherKinds[roleSentinel].Primary(ctx, l, addr)
}

// sentinelList is SENTINEL REPLICAS or SENTINEL SENTINELS from addr.
func sentinelList(ctx context.Context, a *admin, addr, what string) ([]map[string]string, error) {
	r, err := a.do(ctx, addr, "SENTINEL", what, MasterName)
	if err != nil {
		return nil, err
	}
	return FieldMaps(r)
}
