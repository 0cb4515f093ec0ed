package cluster

import "testing"

// HoldDockerRun is holdDockerRun for the external tests (package
// cluster_test) of this test binary: their docker runs hold composeMu
// shared, once they hold a slot.
var HoldDockerRun = holdDockerRun

// StartDocker and DockerSlot are startDocker and dockerSlot for the
// external tests: a docker run of the test binary's own, in a slot.
var (
	StartDocker = startDocker
	DockerSlot  = dockerSlot
)

// What the redlock topology's docker test (package cluster_test: the
// deployment lives in deployments/redlock, which imports this package) checks
// its containers with.
var (
	CtxT             = ctxT
	DockerInfo       = dockerInfo
	CheckClockJump   = checkClockJump
	CheckPauseResume = checkPauseResume
)

// DropConn closes the harness's cached connection to the node, so that the
// next command dials again (through an isolation, it then fails).
func DropConn(t *testing.T, d *Docker, name string) { d.topo.adm.drop(d.mustAddr(t, name)) }
