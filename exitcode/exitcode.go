// Package exitcode holds the exit codes every lockjepsen command returns,
// Jepsen's (jepsen.cli): scripts and CI gates written for Jepsen read
// lockjepsen's the same way.
package exitcode

const (
	// Valid: the run or check found no violation (or the command succeeded).
	Valid = 0
	// Invalid: violations found.
	Invalid = 1
	// Unknown: the checker ran out of its budget without a verdict. Not 0,
	// since nothing was proven (Jepsen treats unknown as not valid, so a CI
	// gate on 0 fails), and not 1, since no violation was found.
	Unknown = 2
	// BadInput: refused before anything ran, or a file that cannot be
	// judged: a bad flag or argument, a missing tool, a malformed history, a
	// lock client that broke its protocol. The message names the problem and
	// the fix.
	BadInput = 254
	// Crashed: the run itself could not be carried out to the end (a cluster
	// that did not come up, a fault step that failed, an interruption); what
	// was recorded is on disk and `lockjepsen check DIR` judges it.
	Crashed = 255
)

// Doc is the one-paragraph summary the CLI prints under its help.
const Doc = "exit codes (Jepsen's): 0 valid, 1 invalid (violations found), 2 unknown (no verdict within the checker's budget), " +
	"254 bad input (flags, arguments, missing tools, a malformed history: nothing was judged), 255 the run could not be carried out to the end"
