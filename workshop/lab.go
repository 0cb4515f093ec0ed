// Package workshop is the 90-minute fencing workshop: eight labs, each a
// prediction, one command, a claim checked against what the command produced,
// and what to open. The labs, their commands and their claims live in one table
// (Labs) that `lockjepsen lab N`, the pages in docs/workshop/ and the tests all
// read, so a page whose claim stops being true fails the build.
package workshop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockjepsen/lockjepsen/scenario"
)

// Kind says how a step produces its evidence.
type Kind int

const (
	// KindRun is a `lockjepsen run` with Args; evidence is its run folder.
	KindRun Kind = iota
	// KindScript drives a topology by hand with valkey-cli (Script names the
	// script); evidence is transcript.json.
	KindScript
	// KindReport reads the other labs' folders (the closing table).
	KindReport
	// KindShrink is `lockjepsen shrink` of the run step From of the same
	// session: the participant's own run cut down to what its first
	// violation needs, checked again so that its folder has a timeline of
	// a dozen events to open; evidence is that folder, read as a run's.
	KindShrink
)

// Step is one command of a lab.
type Step struct {
	// Name is the step's folder under the lab directory, e.g. "lab2".
	Name string
	Kind Kind
	// Args are `lockjepsen run` flags (KindRun).
	Args []string
	// Script names a by-hand script (KindScript): see scripts.go.
	Script string
	// From names the run step whose folder a KindShrink step shrinks.
	From string
	// Claims are what the page says this step shows; each is checked.
	Claims []Claim
	// Open lists what to look at, relative to the step folder.
	Open []string
	// Retries is how many times a step whose claims missed is run again with
	// the next seed: for lessons that hang on a race inside one client (a
	// paused client writes only if its write wins against its own expiry
	// check when it wakes, about half the pauses), not to hide regressions.
	Retries int
	// Lab is the number of the lab the step belongs to (set by Labs).
	Lab int
}

// Claim is one sentence of a page, with the check that keeps it true.
type Claim struct {
	Text string
	// Check returns what was observed (for the report) and whether the
	// claim held.
	Check func(ev *Evidence) (observed string, ok bool)
}

// Lab is one page and one `lockjepsen lab N`.
type Lab struct {
	N        int
	Title    string
	Question string // the prediction, asked before anything runs
	Steps    []Step
	// Minutes is the lab's slot in the 90-minute schedule (talk + run + discuss).
	Minutes int
}

// Command is the command line a step stands for, as the page prints it.
func (s Step) Command() string {
	switch s.Kind {
	case KindRun:
		return "lockjepsen run " + strings.Join(s.Args, " ")
	case KindScript:
		return fmt.Sprintf("lockjepsen lab %d   # %s", s.Lab, stepBlurb(s))
	case KindShrink:
		return fmt.Sprintf("lockjepsen shrink %s --out %s", filepath.Join(DefaultDir, s.From), filepath.Join(DefaultDir, s.Name))
	}
	return fmt.Sprintf("lockjepsen lab %d   # %s", s.Lab, stepBlurb(s))
}

// scriptVersion is bumped when a by-hand script's commands change, so that
// captured transcripts are marked stale like run outputs are.
var scriptVersion = map[string]string{"lock-by-hand": "3", "min-replicas-window": "2"}

// Hash identifies what a step's captured output depends on: its command, its
// claims, and the scenario preset its command starts from (a preset change
// in scenario/ changes the run, so the page's capture goes stale too).
func (s Step) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00", s.Kind, s.Name, strings.Join(s.Args, "\x01"), scriptVersion[s.Script])
	if s.From != "" { // only then, so that the other steps' hashes stay as captured
		fmt.Fprintf(h, "from %s\x00", s.From)
	}
	for _, c := range s.Claims {
		fmt.Fprintf(h, "%s\x00", c.Text)
	}
	if name := s.Flag("--scenario"); name != "" {
		if sc, err := scenario.Get(name); err == nil {
			b, _ := json.Marshal(sc)
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Flag returns the value of a `run` flag in Args ("" when absent).
func (s Step) Flag(name string) string {
	for i, a := range s.Args {
		if a == name && i+1 < len(s.Args) {
			return s.Args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// Get returns lab n.
func Get(n int) (Lab, error) {
	for _, l := range Labs() {
		if l.N == n {
			return l, nil
		}
	}
	return Lab{}, fmt.Errorf("no lab %d: the labs are 1 to %d ('lockjepsen lab' lists them)", n, len(Labs()))
}

// TotalMinutes is the schedule's sum; the facilitator's guide shows it.
func TotalMinutes() int {
	t := 0
	for _, l := range Labs() {
		t += l.Minutes
	}
	return t
}
