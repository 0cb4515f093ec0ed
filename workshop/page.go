package workshop

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// The pages in docs/workshop/ are prose written by hand around generated
// regions:
//
//	<!-- BEGIN workshop:KIND ID hash=H -->
//	...
//	<!-- END workshop:KIND ID -->
//
// KIND is question, command, claims (rendered from Labs, always current) or
// output (real output captured by scripts/workshop-capture.sh; H is the hash
// of the step it came from, so a changed command, claim or scenario preset
// marks it stale) or timings (the wall-time table of the last capture).
var region = regexp.MustCompile(`(?s)<!-- BEGIN workshop:(\w+) ([\w-]+)(?: hash=(\w+))? -->\n(.*?)<!-- END workshop:(\w+) ([\w-]+) -->`)

// PageFile is lab n's page name.
func PageFile(n int) string { return fmt.Sprintf("lab%d.md", n) }

// Rendered returns the text of a region that is derived from Labs alone.
func Rendered(l Lab, kind, id string) (string, bool) {
	switch kind {
	case "question":
		return "> **Predict first:** " + l.Question + "\n", true
	case "command":
		var b strings.Builder
		b.WriteString("```sh\n")
		for _, s := range l.Steps {
			if s.Kind == KindScript || s.Kind == KindReport {
				fmt.Fprintf(&b, "lockjepsen lab %d    # %s\n", l.N, stepBlurb(s))
				continue
			}
			if s.Kind == KindShrink {
				b.WriteString(s.Command() + "\n")
				continue
			}
			fmt.Fprintf(&b, "lockjepsen run %s\n", strings.Join(s.Args, " "))
		}
		b.WriteString("```\n")
		return b.String(), true
	case "claims":
		var b strings.Builder
		for _, s := range l.Steps {
			if s.Name != id {
				continue
			}
			for _, c := range s.Claims {
				fmt.Fprintf(&b, "- %s\n", c.Text)
			}
		}
		return b.String(), true
	}
	return "", false
}

func stepBlurb(s Step) string {
	switch s.Script {
	case "lock-by-hand":
		return "valkey-cli against the 'lockjepsen cluster up' topology (or a private one)"
	case "min-replicas-window":
		return "first: freeze both replicas of a private topology and time the window"
	}
	return "the closing table, from the runs of labs 2-8"
}

// Stale lists what is out of date in the pages under dir: a derived region
// that differs from what Labs renders, a step with no captured output, or an
// output captured from a different step definition.
func Stale(dir string) ([]string, error) {
	var problems []string
	for _, l := range Labs() {
		path := filepath.Join(dir, PageFile(l.N))
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read page: %w", err)
		}
		seen := map[string]bool{}
		for _, m := range region.FindAllStringSubmatch(string(b), -1) {
			kind, id, hash, body := m[1], m[2], m[3], m[4]
			if m[5] != kind || m[6] != id {
				problems = append(problems, fmt.Sprintf("%s: region %s %s ends as %s %s", path, kind, id, m[5], m[6]))
				continue
			}
			seen[kind+" "+id] = true
			if want, ok := Rendered(l, kind, id); ok && body != want {
				problems = append(problems, fmt.Sprintf("%s: the %s region %s differs from the lab table", path, kind, id))
			}
			if kind == "output" {
				s, ok := step(l, id)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s: output of unknown step %s", path, id))
				} else if hash != s.Hash() {
					problems = append(problems, fmt.Sprintf("%s: output of %s was captured from another definition (hash %s, now %s)", path, id, hash, s.Hash()))
				}
			}
		}
		want := []string{"question " + l.Steps[0].Name, "command " + l.Steps[0].Name}
		for _, s := range l.Steps {
			want = append(want, "claims "+s.Name, "output "+s.Name)
		}
		for _, w := range want {
			if !seen[w] {
				problems = append(problems, fmt.Sprintf("%s: no %s region", path, w))
			}
		}
	}
	return problems, nil
}

func step(l Lab, name string) (Step, bool) {
	for _, s := range l.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}

// Capture rewrites every generated region of the pages under dir from the
// reports of a session: derived regions from Labs, output regions from what
// the steps printed, with each timeline copied next to the pages.
func Capture(dir string, reports []StepReport, total time.Duration, timings bool) error {
	byName := map[string]StepReport{}
	for _, r := range reports {
		byName[r.Step.Name] = r
	}
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		return fmt.Errorf("pages: %w", err)
	}
	for _, l := range Labs() {
		path := filepath.Join(dir, PageFile(l.N))
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read page: %w", err)
		}
		var ferr error
		text := region.ReplaceAllStringFunc(string(b), func(m string) string {
			sm := region.FindStringSubmatch(m)
			kind, id := sm[1], sm[2]
			body, hash := sm[4], sm[3]
			if want, ok := Rendered(l, kind, id); ok {
				body = want
			}
			if kind == "output" {
				s, ok := step(l, id)
				r, ran := byName[id]
				if ok && ran {
					body, hash = outputBlock(r, dir, &ferr), s.Hash()
				}
			}
			head := fmt.Sprintf("<!-- BEGIN workshop:%s %s", kind, id)
			if hash != "" {
				head += " hash=" + hash
			}
			return head + " -->\n" + body + fmt.Sprintf("<!-- END workshop:%s %s -->", kind, id)
		})
		if ferr != nil {
			return ferr
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write page: %w", err)
		}
	}
	if !timings {
		return nil
	}
	return writeTimings(filepath.Join(dir, "README.md"), reports, total)
}

// outputBlock is a step's captured output as the page shows it.
func outputBlock(r StepReport, dir string, ferr *error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Captured by `scripts/workshop-capture.sh` (%s, %v):\n\n```\n$ %s\n", time.Now().Format("2006-01-02"), r.Duration.Round(100*time.Millisecond), r.Step.Command())
	summary := strings.TrimRight(r.Summary, "\n")
	// The run folder's absolute path differs on every machine.
	summary = strings.ReplaceAll(summary, r.Dir+"/", filepath.Join(DefaultDir, r.Step.Name)+"/")
	b.WriteString(summary + "\n```\n\n")
	b.WriteString("| claim | held | observed |\n|---|---|---|\n")
	for _, c := range r.Claims {
		held := "yes"
		if !c.OK {
			held = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Text, held, strings.ReplaceAll(c.Observed, "|", "\\|"))
	}
	if r.Err != nil {
		fmt.Fprintf(&b, "\n**The step could not be carried out:** %v\n", r.Err)
	}
	if r.Step.Kind == KindRun || r.Step.Kind == KindShrink {
		img := filepath.Join("img", r.Step.Name+"-"+runfolder.TimelinePNG)
		if err := copyFile(filepath.Join(r.Dir, runfolder.TimelinePNG), filepath.Join(dir, img)); err != nil {
			*ferr = err
		} else {
			fmt.Fprintf(&b, "\n![timeline of %s](%s)\n", r.Step.Name, img)
		}
	}
	return b.String()
}

func writeTimings(readme string, reports []StepReport, total time.Duration) error {
	b, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("read guide: %w", err)
	}
	var t strings.Builder
	fmt.Fprintf(&t, "Measured by `scripts/workshop-capture.sh` on %s (all labs back to back, one machine):\n\n", time.Now().Format("2006-01-02"))
	t.WriteString("| step | wall time |\n|---|---|\n")
	for _, r := range reports {
		fmt.Fprintf(&t, "| %s | %.1f s |\n", r.Step.Name, r.Duration.Seconds())
	}
	fmt.Fprintf(&t, "| **all labs** | **%.1f s (%.1f min)** |\n", total.Seconds(), total.Minutes())
	text := region.ReplaceAllStringFunc(string(b), func(m string) string {
		sm := region.FindStringSubmatch(m)
		if sm[1] != "timings" {
			return m
		}
		return "<!-- BEGIN workshop:timings " + sm[2] + " -->\n" + t.String() + "<!-- END workshop:timings " + sm[2] + " -->"
	})
	if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write guide: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy timeline: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("copy timeline: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy timeline: %w", err)
	}
	return out.Close()
}
