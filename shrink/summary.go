package shrink

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockjepsen/lockjepsen/history"
)

// Record is shrink.json: where the shrunk run came from, what it shows and
// what it kept, so that the folder explains itself after the terminal is
// gone.
type Record struct {
	From      string       `json:"from"`
	Kind      string       `json:"kind"`
	Key       string       `json:"key"`
	Cause     string       `json:"cause"`
	Before    Counts       `json:"before"`
	After     Counts       `json:"after"`
	Seed      int          `json:"seed_units"`
	Start     int          `json:"start_units"`
	KeyUnits  int          `json:"key_units"`
	KeyOnly   bool         `json:"key_only"`
	Checks    int          `json:"checks"`
	ReadMs    float64      `json:"read_ms"`
	ElapsedMs float64      `json:"elapsed_ms"` // the check of the whole run and the shrink, after reading it
	Kept      []KeptRecord `json:"kept"`
}

// KeptRecord is one kept unit in shrink.json.
type KeptRecord struct {
	What    string   `json:"what"` // operation, fault, event
	F       string   `json:"f"`
	Key     string   `json:"key,omitempty"`
	Client  *int     `json:"client,omitempty"`
	Token   string   `json:"token,omitempty"`
	Node    string   `json:"node,omitempty"`
	Outcome string   `json:"outcome,omitempty"`
	StartS  float64  `json:"start_s"`          // seconds since the shrunk history's first event
	EndS    *float64 `json:"end_s,omitempty"`  // its completion or heal; absent when it never came
	Without string   `json:"without"`          // the checker's verdict on the result without this unit
	Events  []int64  `json:"events,omitempty"` // history indexes
}

// Record is the result as shrink.json holds it.
func (r *Result) Record(from string) Record {
	rec := Record{From: from, Kind: r.Target.Kind, Key: r.Target.Key, Cause: r.Target.Cause, Before: r.Before,
		After: r.After, Seed: r.Seed, Start: r.From, KeyUnits: r.Units, KeyOnly: r.KeyOnly, Checks: r.Checks,
		ReadMs: float64(r.Read.Microseconds()) / 1e3, ElapsedMs: float64(r.Elapsed.Microseconds()) / 1e3, Kept: []KeptRecord{}}
	t0 := r.Shrunk.Events[0].Time
	for _, k := range r.Kept {
		kr := KeptRecord{What: k.what(), F: k.F, Key: k.Key, Token: k.Token, Node: k.Node, Outcome: string(k.Outcome),
			StartS: secs(k.Start - t0), Without: k.Without}
		if !k.Fault {
			c := k.Client
			kr.Client = &c
		}
		if k.events[1] >= 0 {
			e := secs(k.End - t0)
			kr.EndS = &e
		}
		for _, e := range k.Events {
			kr.Events = append(kr.Events, e.Index)
		}
		rec.Kept = append(rec.Kept, kr)
	}
	return rec
}

func secs(ns int64) float64 { return float64(ns/1e3) / 1e6 }

func (k *Kept) what() string {
	switch {
	case !k.Fault:
		return "operation"
	case k.events[1] >= 0 || k.begins:
		return "fault"
	}
	return "event"
}

// Text is what `lockjepsen shrink` prints: the violation, the sizes before
// and after and the time taken, the kept units in a table with what the
// verdict would be without each, and the command that checks the result.
func (r *Result) Text(from, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "shrunk %s: %s -> %s\n", from, r.Target, out)
	fmt.Fprintf(&b, "  before: %s\n  after:  %s\n", r.Before, r.After)
	scope := "the key's own operations and the faults"
	if !r.KeyOnly {
		scope = "every operation (a token shared with another key ties their checks)"
	}
	fmt.Fprintf(&b, "  took %s: read %s, then one check of the whole run and %d of sub-histories, from %d units (%d named by the\n  violation) of the %d in %s\n\n",
		(r.Read + r.Elapsed).Round(time.Millisecond), r.Read.Round(time.Millisecond), r.Checks, r.From, r.Seed, r.Units, scope)

	labels := r.tokenLabels()
	t0 := r.Shrunk.Events[0].Time
	fmt.Fprintf(&b, "kept (t: seconds from the shrunk history's first event, %.3f s into the run; every unit is needed:\nthe last column is the verdict without it):\n", secs(t0-r.origin))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  t\tclient\top\ttoken\toutcome\tdetail\twithout it")
	for _, k := range r.Kept {
		end := "-"
		if k.events[1] >= 0 {
			end = fmt.Sprintf("%.3f", secs(k.End-t0))
		}
		if k.Fault {
			detail := k.Node
			if k.what() == "fault" {
				detail += " until " + end
				if end == "-" {
					detail = k.Node + ", never healed"
				}
			}
			fmt.Fprintf(tw, "  %.3f\tnemesis\t%s\t\t\t%s\t%s\n", secs(k.Start-t0), k.F, detail, k.Without)
			continue
		}
		outcome := string(k.Outcome)
		if outcome == "" {
			outcome = "in flight"
		}
		fmt.Fprintf(tw, "  %.3f\t%d\t%s\t%s\t%s\t%s\t%s\n", secs(k.Start-t0), k.Client, k.F, labels[k.Token], outcome, k.detail(end), k.Without)
	}
	tw.Flush()
	var legend []string
	for tok, l := range labels {
		legend = append(legend, l+" = "+tok[:min(8, len(tok))])
	}
	slices.Sort(legend)
	if len(legend) > 0 {
		fmt.Fprintf(&b, "  tokens: %s\n", strings.Join(legend, ", "))
	}
	fmt.Fprintf(&b, "\n  %s\n\ncheck it: lockjepsen check %s\n", r.Violation.Explanation, out)
	return b.String()
}

func (c Counts) String() string {
	return fmt.Sprintf("%s: %s, %s, %s", count(c.Events, "event"), count(c.Operations, "operation"),
		count(c.Nemesis, "nemesis event"), count(c.Attempts, "resource attempt"))
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// detail is what an operation carried: its reply's end, fence, value,
// verdict and error, as far as it had them.
func (k *Kept) detail(end string) string {
	parts := []string{"until " + end}
	if end == "-" {
		parts = []string{"no reply"}
	}
	for _, e := range k.Events {
		if e.TTLMs > 0 && e.Type == history.Invoke {
			parts = append(parts, fmt.Sprintf("ttl %v", time.Duration(e.TTLMs)*time.Millisecond))
		}
		if e.Fence != 0 && (e.Type == history.OK || e.F != history.FAcquire) {
			parts = append(parts, fmt.Sprintf("fence %d", e.Fence))
			break
		}
	}
	var value *int64 // a write's in its invoke, a read's in its reply
	for _, e := range k.Events {
		if e.Value != nil && value == nil {
			value = e.Value
			parts = append(parts, fmt.Sprintf("value %d", *e.Value))
		}
		if e.Verdict != "" {
			parts = append(parts, e.Verdict)
		}
		if e.Error != "" {
			// The table must fit a screen; shrink.json and the history
			// keep the whole text.
			text := []rune(e.Error)
			if len(text) > 48 {
				text = append(text[:47], '…')
			}
			parts = append(parts, fmt.Sprintf("%q", string(text)))
		}
	}
	return strings.Join(parts, ", ")
}

// tokenLabels names the violation's tokens A, B, ... and every other kept
// token by the letters after them, in order of first appearance.
func (r *Result) tokenLabels() map[string]string {
	labels := map[string]string{}
	add := func(tok string) {
		if _, ok := labels[tok]; !ok && tok != "" {
			labels[tok] = string(rune('A' + len(labels)%26))
		}
	}
	for _, tok := range r.Violation.Tokens {
		add(tok)
	}
	for _, k := range r.Kept {
		add(k.Token)
	}
	return labels
}
