// Package report draws a run: the timeline plot (who held which lock when,
// the nemesis's faults, the violations) and index.html tying the run together.
package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
)

// Timeline is what the plot shows, computed from the history and the verdicts.
type Timeline struct {
	Start   int64 // true time of the first event; the x axis counts seconds from it
	Clients int
	Holds   []Hold
	Faults  []Band
	Writes  []Mark
	Doubles []Band // double holders: two clients acted as holder at once
}

// Hold is a client acting as a lock holder.
type Hold struct {
	Client     int
	Key        string
	From, To   int64
	KeyIndex   int
	Invalid    bool // part of a violation
	Incomplete bool // never released: ran to the end of the history
}

// Band is a shaded interval.
type Band struct {
	From, To int64
	Label    string
	Client   int // double holders: the stale client
}

// Mark is a write at the resource.
type Mark struct {
	Client  int
	Time    int64
	Verdict string // accepted | rejected | unknown
	Stale   bool
}

// BuildTimeline reduces a history to what the plot draws.
func BuildTimeline(events []history.Event, res *checker.Result) Timeline {
	var tl Timeline
	if len(events) == 0 {
		return tl
	}
	tl.Start = events[0].Time
	end := events[len(events)-1].Time
	keyIdx := map[string]int{}
	type open struct {
		key  string
		from int64
	}
	holding := map[int]*open{}
	invoked := map[history.Process]history.Event{}
	openFaults := map[string]history.Event{}
	closeHold := func(c int, at int64, incomplete bool) {
		if h := holding[c]; h != nil {
			tl.Holds = append(tl.Holds, Hold{Client: c, Key: h.key, From: h.from, To: at, KeyIndex: keyIdx[h.key], Incomplete: incomplete})
			delete(holding, c)
		}
	}
	for _, e := range events {
		if !e.IsClient() {
			if _, ok := nemesis.MarkOf(e.F); ok {
				openFaults[e.F+"@"+e.Node] = e
				continue
			}
			for _, m := range nemesis.Marks() {
				if m.Heal == e.F {
					if st, ok := openFaults[m.Event+"@"+e.Node]; ok {
						tl.Faults = append(tl.Faults, Band{From: st.Time, To: e.Time, Label: m.Event + " " + st.Node})
						delete(openFaults, m.Event+"@"+e.Node)
					}
				}
			}
			if e.F == history.NFailover {
				tl.Faults = append(tl.Faults, Band{From: e.Time, To: e.Time, Label: "failover to " + e.Node})
			}
			continue
		}
		if e.Client+1 > tl.Clients {
			tl.Clients = e.Client + 1
		}
		if e.Type == history.Invoke {
			invoked[e.Process] = e
			if e.F == history.FRelease || e.F == history.FAcquire {
				closeHold(e.Client, e.Time, false)
			}
			continue
		}
		inv := invoked[e.Process]
		switch {
		case e.F == history.FAcquire && e.Type == history.OK:
			if _, ok := keyIdx[inv.Key]; !ok {
				keyIdx[inv.Key] = len(keyIdx)
			}
			holding[e.Client] = &open{key: inv.Key, from: e.Time}
		case e.F == history.FExtend && e.Type == history.Fail && strings.Contains(e.Error, "not held"):
			// The server said the lock is gone; a transport error says nothing,
			// and the client works on until its lease's deadline.
			closeHold(e.Client, e.Time, false)
		case e.F == history.FRead && e.Verdict == history.Rejected:
			tl.Writes = append(tl.Writes, Mark{Client: e.Client, Time: e.Time, Verdict: history.Rejected})
		case e.F == history.FWrite:
			v := "unknown"
			if e.Type == history.OK {
				v = history.Accepted
			} else if e.Type == history.Fail {
				v = history.Rejected
			}
			tl.Writes = append(tl.Writes, Mark{Client: e.Client, Time: e.Time, Verdict: v})
		}
	}
	for c := range holding {
		closeHold(c, end, true)
	}
	for k, st := range openFaults {
		tl.Faults = append(tl.Faults, Band{From: st.Time, To: end, Label: k})
	}
	if res != nil {
		for _, d := range res.DoubleHolderList {
			tl.Doubles = append(tl.Doubles, Band{From: d.Start, To: d.End, Label: d.Cause, Client: d.StaleClient})
			for i := range tl.Writes {
				w := &tl.Writes[i]
				if w.Client == d.StaleClient && w.Time >= d.Start && w.Time <= d.End+int64(1e9) {
					w.Stale = true
				}
			}
			for i := range tl.Holds {
				h := &tl.Holds[i]
				if h.Key == d.Key && (h.Client == d.StaleClient || h.Client == d.NewClient) && h.From <= d.End && h.To >= d.Start {
					h.Invalid = d.DoubleGrant
				}
			}
		}
	}
	sort.Slice(tl.Holds, func(i, j int) bool { return tl.Holds[i].From < tl.Holds[j].From })
	return tl
}

var keyColors = []color.NRGBA{
	{66, 133, 244, 255}, {15, 157, 88, 255}, {171, 71, 188, 255}, {0, 172, 193, 255},
	{255, 112, 67, 255}, {158, 157, 36, 255}, {92, 107, 192, 255}, {240, 98, 146, 255},
}

var (
	red     = color.NRGBA{219, 68, 55, 255}
	faultC  = color.NRGBA{244, 180, 0, 60}
	doubleC = color.NRGBA{219, 68, 55, 90}
)

// Plot draws the timeline; Save it as PNG and SVG.
func (tl Timeline) Plot(title string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the first operation (true time)"
	p.Y.Label.Text = "client"
	sec := func(t int64) float64 { return float64(t-tl.Start) / 1e9 }
	rows := tl.Clients
	if rows == 0 {
		rows = 1
	}
	p.Y.Min, p.Y.Max = -1, float64(rows)
	var ticks []plot.Tick
	step := int(math.Max(1, float64(rows)/16))
	for c := 0; c < rows; c += step {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Marker = plot.TickerFunc(secondTicks)
	p.Add(&bands{tl: tl, sec: sec, rows: rows})
	p.Add(&holds{tl: tl, sec: sec})
	var acc, rej, stale plotter.XYs
	for _, w := range tl.Writes {
		pt := plotter.XY{X: sec(w.Time), Y: float64(w.Client)}
		switch {
		case w.Stale && w.Verdict == history.Accepted:
			stale = append(stale, pt)
		case w.Verdict == history.Rejected:
			rej = append(rej, pt)
		case w.Verdict == history.Accepted:
			acc = append(acc, pt)
		}
	}
	addScatter := func(xy plotter.XYs, shape draw.GlyphDrawer, c color.Color, r vg.Length, name string) error {
		if len(xy) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("scatter %s: %w", name, err)
		}
		s.GlyphStyle = draw.GlyphStyle{Shape: shape, Color: c, Radius: r}
		p.Add(s)
		p.Legend.Add(name, s)
		return nil
	}
	if len(acc) < 2000 {
		if err := addScatter(acc, draw.CircleGlyph{}, color.Black, vg.Points(1.2), "write accepted"); err != nil {
			return nil, err
		}
	}
	if err := addScatter(rej, draw.CrossGlyph{}, red, vg.Points(3.5), "read or write turned away by the fence"); err != nil {
		return nil, err
	}
	if err := addScatter(stale, draw.TriangleGlyph{}, red, vg.Points(4), "stale write accepted"); err != nil {
		return nil, err
	}
	p.Legend.Top = true
	p.Legend.Left = false
	return p, nil
}

// bands shades fault intervals (yellow) and double holders (red) behind the bars.
type bands struct {
	tl   Timeline
	sec  func(int64) float64
	rows int
}

func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	y0, y1 := trY(-1), trY(float64(b.rows))
	shade := func(from, to int64, col color.Color, minW vg.Length) {
		x0, x1 := trX(b.sec(from)), trX(b.sec(to))
		if x1-x0 < minW {
			x1 = x0 + minW
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
	for _, f := range b.tl.Faults {
		shade(f.From, f.To, faultC, vg.Points(1.5))
	}
	for _, d := range b.tl.Doubles {
		shade(d.From, d.To, doubleC, vg.Points(2))
	}
	for _, f := range b.tl.Faults {
		x := trX(b.sec(f.From))
		c.FillText(draw.TextStyle{Color: color.RGBA{120, 90, 0, 255}, Font: p.Y.Tick.Label.Font, Rotation: math.Pi / 2, Handler: p.Y.Tick.Label.Handler},
			vg.Point{X: x + vg.Points(7), Y: y0 + vg.Points(4)}, f.Label)
	}
}

func (b *bands) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, f := range b.tl.Faults {
		xmin, xmax = math.Min(xmin, b.sec(f.From)), math.Max(xmax, b.sec(f.To))
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 0
	}
	return xmin, xmax, -1, float64(b.rows)
}

// holds draws each hold as a thick bar in its client's row, coloured by key;
// holds that take part in a double grant are outlined in red.
type holds struct {
	tl  Timeline
	sec func(int64) float64
}

func (h *holds) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, hd := range h.tl.Holds {
		x0, x1 := trX(h.sec(hd.From)), trX(h.sec(hd.To))
		if x1-x0 < vg.Points(0.8) {
			x1 = x0 + vg.Points(0.8)
		}
		y := trY(float64(hd.Client))
		half := vg.Points(3)
		pts := []vg.Point{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}}
		c.FillPolygon(keyColors[hd.KeyIndex%len(keyColors)], pts)
		if hd.Invalid {
			c.StrokeLines(draw.LineStyle{Color: red, Width: vg.Points(1.5)}, append(pts, pts[0]))
		}
	}
}

func (h *holds) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, hd := range h.tl.Holds {
		xmin, xmax = math.Min(xmin, h.sec(hd.From)), math.Max(xmax, h.sec(hd.To))
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	return xmin, xmax, -1, float64(h.tl.Clients)
}

// Save writes the plot as PNG and SVG next to each other.
func Save(p *plot.Plot, base string, clients int) error {
	h := vg.Length(math.Max(4, math.Min(12, 2+float64(clients)*0.35))) * vg.Inch
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(14*vg.Inch, h, base+ext); err != nil {
			return fmt.Errorf("save %s%s: %w", base, ext, err)
		}
	}
	return nil
}

// secondTicks labels whole seconds at a step that keeps 10 to 25 labels.
func secondTicks(lo, hi float64) []plot.Tick {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 20, 30, 60, 120, 300} {
		step = s
		if (hi-lo)/s <= 25 {
			break
		}
	}
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
	}
	return out
}
