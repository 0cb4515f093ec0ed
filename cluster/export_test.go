package cluster

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
