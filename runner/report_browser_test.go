package runner

import (
	"context"
	"encoding/json"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/report"
)

// TestFailoverRaceReportInBrowser runs the demo once and reads its report as
// a user does, in headless Chromium (checkReportInBrowser). With
// LOCKJEPSEN_REPORT_RUN=DIR it re-checks a copy of that stored run instead.
func TestFailoverRaceReportInBrowser(t *testing.T) {
	testslot.Parallel(t)
	var dir string
	if src := os.Getenv("LOCKJEPSEN_REPORT_RUN"); src != "" {
		dir = filepath.Join(t.TempDir(), "run")
		if out, err := exec.Command("cp", "-r", src, dir).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", src, err, out)
		}
		if _, _, err := CheckDir(dir); err != nil {
			t.Fatal(err)
		}
	} else {
		cfg := config(t, "failover-race", nil)
		runAndLoad(t, cfg)
		dir = cfg.Out
	}
	checkReportInBrowser(t, dir)
}

// browserBoxes is what the probe page reports: every text's box in the
// rendered timeline SVG and every hold's hover rectangle.
type browserBoxes struct {
	Texts []struct {
		Text       string
		X, Y, W, H float64
	}
	FontLoaded bool // the SVG's embedded font, in which gonum measured the labels
	Holds      []struct {
		Client, Token, Double string
		W, H                  float64
	}
}

// checkReportInBrowser opens a failover-race run's index.html and its lock
// key's porcupine page in headless Chromium, saves a screenshot of each into
// the run folder (screenshot-index.png, screenshot-porcupine.png), and
// asserts that
//   - no two texts of the timeline SVG overlap (the boxes the browser lays
//     out: title, axes, legend, the fault labels on their rows);
//   - every hold of every double holder pair in results.json, the older
//     and the newer, is drawn as a bar (its hover rectangle, which the
//     plot records as it draws the bar, has a width);
//   - the porcupine page is titled with the key and the run, not
//     "Porcupine", and porcupine's script drew its picture.
func checkReportInBrowser(t *testing.T, dir string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (make setup-ci installs it): %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res checker.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.DoubleHolderList) == 0 || len(res.Visualizations) == 0 {
		t.Fatalf("the run has no double holder or no porcupine page to look at")
	}
	chrome := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless=new", "--no-sandbox", "--disable-gpu",
			"--hide-scrollbars", "--virtual-time-budget=5000"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return string(out)
	}

	// The probe: the SVG inline, and a script that writes the boxes the
	// browser laid out into the page, which --dump-dom prints.
	svg, err := os.ReadFile(filepath.Join(dir, "timeline.svg"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(svg)
	if i := strings.Index(body, "<svg"); i >= 0 {
		body = body[i:]
	}
	// The script measures once the embedded font has loaded: a data-URL
	// @font-face loads asynchronously, and a measure taken at parse time
	// reads the fallback serif, about 22% wider than the font gonum laid the
	// labels out with ("failover to valkey-2": 128 px before, 105.1 px after,
	// gonum's 78.86 pt) — which made this test fail in about one CI run in
	// four on labels that never touch on screen.
	probe := `<!doctype html><html><body style="margin:0">` + body + `<pre id="out"></pre><script>
document.fonts.ready.then(() => {
const r = {Texts: [], Holds: [], FontLoaded: document.fonts.check('12px "Liberation Serif"')};
for (const t of document.querySelectorAll('svg text')) {
  const b = t.getBoundingClientRect();
  if (t.textContent.trim() !== '') r.Texts.push({Text: t.textContent, X: b.x, Y: b.y, W: b.width, H: b.height});
}
for (const h of document.querySelectorAll('svg rect.hold')) {
  const b = h.getBoundingClientRect();
  r.Holds.push({Client: h.dataset.client, Token: h.dataset.token, Double: h.dataset.double, W: b.width, H: b.height});
}
document.getElementById('out').textContent = 'BOXES' + JSON.stringify(r) + 'END';
});
</script></body></html>`
	probePath := filepath.Join(dir, "timeline-probe.tmp.html")
	if err := os.WriteFile(probePath, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probePath)
	dom := chrome("--dump-dom", "file://"+probePath)
	m := regexp.MustCompile(`(?s)<pre id="out">BOXES(.*?)END</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe reported nothing:\n%.2000s", dom)
	}
	var boxes browserBoxes
	if err := json.Unmarshal([]byte(strings.ReplaceAll(m[1], "&quot;", `"`)), &boxes); err != nil {
		t.Fatalf("probe output: %v\n%.2000s", err, m[1])
	}
	if !boxes.FontLoaded {
		t.Fatalf("the timeline's embedded font did not load in the browser: its labels are laid out for a font the reader does not see")
	}
	if len(boxes.Texts) < 10 {
		t.Fatalf("only %d texts in the timeline", len(boxes.Texts))
	}
	const slack = 0.5 // px: glyph boxes that merely touch do not overlap
	for i, a := range boxes.Texts {
		for _, c := range boxes.Texts[i+1:] {
			if a.X+slack < c.X+c.W && c.X+slack < a.X+a.W && a.Y+slack < c.Y+c.H && c.Y+slack < a.Y+a.H {
				t.Errorf("timeline labels overlap: %q at (%.0f,%.0f %.0fx%.0f) and %q at (%.0f,%.0f %.0fx%.0f)",
					a.Text, a.X, a.Y, a.W, a.H, c.Text, c.X, c.Y, c.W, c.H)
			}
		}
	}
	drawn := map[string]float64{}
	roles := map[string]string{}
	for _, h := range boxes.Holds {
		if h.W > drawn[h.Token] {
			drawn[h.Token] = h.W
		}
		if h.Double != "" {
			roles[h.Token] = h.Double
		}
	}
	for _, d := range res.DoubleHolderList {
		for _, side := range []struct {
			token, role string
			client      int
		}{{d.StaleToken, "older", d.StaleClient}, {d.NewToken, "newer", d.NewClient}} {
			if drawn[side.token] < 2 {
				t.Errorf("double holder %d & %d at %d: client %d's hold (token %.8s, the %s holder) is not drawn (width %.1f px)",
					d.StaleClient, d.NewClient, d.Start, side.client, side.token, side.role, drawn[side.token])
			}
			if roles[side.token] == "" {
				t.Errorf("client %d's hold (token %.8s) is not marked as part of a double holder", side.client, side.token)
			}
		}
	}

	// Porcupine's page of the lock key: titled with key and run, drawn.
	page := ""
	for _, v := range res.Visualizations {
		if strings.HasPrefix(v, "porcupine-lock-") {
			page = v
		}
	}
	if page == "" {
		t.Fatalf("no porcupine page of a lock key among %v", res.Visualizations)
	}
	pdom := chrome("--dump-dom", "file://"+filepath.Join(dir, page))
	key := ""
	for _, v := range res.Violations {
		if v.Picture == page {
			key = v.Key
		}
	}
	wantTitle := report.PageTitle("lock", key, filepath.Base(dir))
	if !strings.Contains(pdom, "<title>"+htmlEscape(wantTitle)+"</title>") {
		t.Errorf("porcupine page %s is not titled %q", page, wantTitle)
	}
	if !regexp.MustCompile(`<div id="canvas"><svg`).MatchString(pdom) {
		t.Errorf("porcupine's script drew nothing on %s", page)
	}

	// Screenshots, kept in the run folder.
	for _, s := range []struct{ target, shot, size string }{
		{"index.html", "screenshot-index.png", "1400,2400"},
		{page, "screenshot-porcupine.png", "1400,1000"},
	} {
		path := filepath.Join(dir, s.shot)
		chrome("--screenshot="+path, "--window-size="+s.size, "file://"+filepath.Join(dir, s.target))
		png, err := os.ReadFile(path)
		if err != nil || len(png) < 10_000 || string(png[1:4]) != "PNG" {
			t.Errorf("screenshot of %s: %v (%d bytes)", s.target, err, len(png))
		}
	}
	t.Logf("%s: %d labels, no overlap; %d double holders, every hold drawn; screenshots in %s", dir, len(boxes.Texts), len(res.DoubleHolderList), dir)
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}
