// Package workload is the lock client: the OS process that takes locks,
// works in its critical section against the fenced resource and streams every
// operation to the runner as history events. The runner starts one process per
// client slot with StartClient (the hidden `lockjepsen client` subcommand) so
// that SIGSTOP stops a client for real.
//
// Protocol, stdin → client: the first line is the ClientConfig as JSON; every
// further line is a Control. stdout → runner: one history.Event per line, no
// index, written as each happens. stderr: diagnostics only.
package workload
