package cluster

// HoldDockerRun is holdDockerRun for the external tests (package
// cluster_test) of this test binary: their docker runs hold composeMu
// shared, once they hold a slot.
var HoldDockerRun = holdDockerRun
