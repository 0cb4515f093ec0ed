// Command lockjepsen is a Jepsen-style fault-injection simulator for distributed
// locks on Valkey 9. Each subcommand lives in its own file and registers itself.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/lockjepsen/lockjepsen/exitcode"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes, the same for every subcommand.
const (
	exitValid   = exitcode.Valid
	exitInvalid = exitcode.Invalid
	exitUsage   = exitcode.BadInput // refused: bad input, missing tool, broken history
	exitCrashed = exitcode.Crashed  // the run could not be carried out to the end
)

type command struct {
	name    string
	summary string
	hidden  bool // internal subcommands started by the runner, e.g. client
	run     func(args []string) int
	// subcommands are the words run dispatches on before it parses flags
	// (cluster up, bench locks), each with a flag set of its own: the flag
	// test reaches every flag set through them.
	subcommands []string
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

// dispatch runs a subcommand. Asked-for help goes to stdout with exit 0; no
// command at all is a usage error on stderr.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return exitValid
	case "--version", "-version":
		return commands["version"].run(nil)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lockjepsen: unknown command %q; run 'lockjepsen help' for the list\n", args[0])
		return exitUsage
	}
	return c.run(args[1:])
}

// subUsage answers a command with subcommands called bare or with -h: asked
// for, the usage is the answer (stdout, exit 0); given nothing, it is the
// error (stderr, exit 254), as the top level's own.
func subUsage(args []string, text string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, text)
		return exitUsage
	}
	fmt.Fprint(os.Stdout, text)
	return exitValid
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "lockjepsen: fault-injection simulator for distributed locks on Valkey 9")
	fmt.Fprintln(w, "\nusage: lockjepsen <command> [flags]   (lockjepsen <command> -h for its flags)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\n"+exitcode.Doc)
}

// newFlagSet makes a flag set whose errors are reported, not fatal, so that every
// subcommand turns bad flags into the same one-line message and exit code.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("lockjepsen "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: lockjepsen %s\n\nflags:\n", synopsis)
		printDefaults(fs)
	}
	return fs
}

// hiddenPrefix marks a flag kept only as an old spelling: it parses, but
// help does not list it.
const hiddenPrefix = "\x00old spelling of --"

// alias registers old as a hidden second name of the flag name (registered
// before): old spellings keep working for a release while help shows one name.
func alias(fs *flag.FlagSet, old, name string) {
	fs.Var(fs.Lookup(name).Value, old, hiddenPrefix+name)
}

// printDefaults is flag.PrintDefaults without the hidden aliases.
func printDefaults(fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, hiddenPrefix) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.PrintDefaults()
}

// inspectFlags, when set (by the flag test only), is handed each flag set
// that reaches parseFlags, which then stops the command as if it had been
// asked for help: the test walks every command's flags from the flag sets
// themselves, so that a new flag gets its bad values without editing the
// test, and no command runs to find them. Every command parses its flags
// before it touches anything, so a command stopped here did nothing.
var inspectFlags func(*flag.FlagSet)

// parseFlags parses args; it returns (code, false) when the caller must exit.
// Help goes to stdout with exit 0, so that `lockjepsen run -h | less` works; a
// bad flag is one line on stderr naming the flag and the problem, without the
// whole usage burying it.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if inspectFlags != nil {
		inspectFlags(fs)
		return exitValid, false
	}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(os.Stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return exitValid, false
	case err != nil:
		name := strings.TrimPrefix(fs.Name(), "lockjepsen ")
		return fail("%s: %v (lockjepsen %s -h lists the flags)", name, err, name), false
	}
	return 0, true
}

// parseInterspersed is parseFlags for commands whose flags may also follow
// their arguments (check DIR --epsilon 20ms): it returns the arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var out []string
	for rest := args; ; {
		if code, ok := parseFlags(fs, rest); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			return out, 0, true
		}
		out, rest = append(out, fs.Arg(0)), fs.Args()[1:]
	}
}

// fail prints an error in the house style and returns exit code 254 (bad input).
func fail(format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintln(os.Stderr, "lockjepsen: "+strings.TrimRight(msg, "\n"))
	return exitUsage
}
