package sweep

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette gives each fault its colour across every plot.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
}

// points is a series with asymmetric error bars.
type points struct{ x, y, lo, hi []float64 }

func (p points) Len() int                    { return len(p.x) }
func (p points) XY(i int) (float64, float64) { return p.x[i], p.y[i] }
func (p points) YError(i int) (float64, float64) {
	return p.y[i] - p.lo[i], p.hi[i] - p.y[i]
}

// layout places the cells: configurations along x, the faults of one
// configuration spread around its tick, so the fault axis reads side by side.
type layout struct {
	configs []string
	faults  []string
	cfgIdx  map[string]int
	fltIdx  map[string]int
}

func newLayout(r *Report) layout {
	l := layout{cfgIdx: map[string]int{}, fltIdx: map[string]int{}}
	for _, c := range r.Plan.Configs {
		l.cfgIdx[c.Name] = len(l.configs)
		l.configs = append(l.configs, c.Name)
	}
	for _, f := range r.Plan.Faults {
		l.fltIdx[f.Name] = len(l.faults)
		l.faults = append(l.faults, f.Name)
	}
	return l
}

func (l layout) x(c CellStats) float64 {
	n := len(l.faults)
	off := 0.0
	if n > 1 {
		off = (float64(l.fltIdx[c.Fault])/float64(n-1) - 0.5) * 0.5
	}
	return float64(l.cfgIdx[c.Config]) + off
}

func (l layout) plot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.NominalX(l.configs...)
	p.X.Tick.Label.Rotation = math.Pi / 8
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Min, p.X.Max = -0.6, float64(len(l.configs))-0.4
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// probabilityPlot: P(double grant per failover) per cell with its Wilson
// interval. A cell with no opportunity draws no point.
func probabilityPlot(r *Report, l layout) (*plot.Plot, error) {
	p := l.plot("double grant per failover (per fault for kinds without one), 95% Wilson interval", "probability")
	p.Y.Min, p.Y.Max = 0, 1
	for fi, f := range l.faults {
		var pts points
		for _, c := range r.Cells {
			if c.Fault != f || c.P == nil {
				continue
			}
			pts.x = append(pts.x, l.x(c))
			pts.y = append(pts.y, *c.P)
			pts.lo = append(pts.lo, c.PLow)
			pts.hi = append(pts.hi, c.PHi)
		}
		if pts.Len() == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("probability plot: %w", err)
		}
		s.GlyphStyle.Color = palette[fi%len(palette)]
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(4)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, fmt.Errorf("probability plot: %w", err)
		}
		eb.LineStyle.Color = palette[fi%len(palette)]
		eb.LineStyle.Width = vg.Points(1.5)
		p.Add(eb, s)
		p.Legend.Add(f, s)
	}
	return p, nil
}

// exposurePlot: every double grant's window as a point (a strip per cell),
// with the cell's p50 as a bar: the distribution, not just its summary.
func exposurePlot(r *Report, l layout) (*plot.Plot, error) {
	p := l.plot("exposure window of each double grant (ms); square = median", "ms both clients held the lock")
	p.Y.Min = 0
	any := false
	for fi, f := range l.faults {
		var xy, med plotter.XYs
		for _, c := range r.Cells {
			if c.Fault != f {
				continue
			}
			x := l.x(c)
			for i, e := range c.Exposures {
				// Deterministic jitter keeps identical windows apart.
				j := (float64(i%7) - 3) * 0.012
				xy = append(xy, plotter.XY{X: x + j, Y: e})
			}
			if c.ExposureMs.Count > 0 {
				med = append(med, plotter.XY{X: x, Y: c.ExposureMs.P50})
			}
		}
		if len(xy) == 0 {
			continue
		}
		any = true
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, fmt.Errorf("exposure plot: %w", err)
		}
		s.GlyphStyle.Color = palette[fi%len(palette)]
		s.GlyphStyle.Shape = draw.RingGlyph{}
		s.GlyphStyle.Radius = vg.Points(3)
		m, err := plotter.NewScatter(med)
		if err != nil {
			return nil, fmt.Errorf("exposure plot: %w", err)
		}
		m.GlyphStyle.Color = palette[fi%len(palette)]
		m.GlyphStyle.Shape = draw.BoxGlyph{}
		m.GlyphStyle.Radius = vg.Points(2)
		p.Add(s, m)
		p.Legend.Add(f, s)
	}
	if !any {
		p.Title.Text += " — none in this sweep"
		p.Y.Max = 1
	}
	return p, nil
}

// barPlot draws one value per cell as a bar-like point series (value,
// optionally with a second value as the top of a range).
func valuePlot(r *Report, l layout, title, ylabel string, val func(CellStats) (float64, float64, bool)) (*plot.Plot, error) {
	p := l.plot(title, ylabel)
	p.Y.Min = 0
	for fi, f := range l.faults {
		var pts points
		for _, c := range r.Cells {
			if c.Fault != f {
				continue
			}
			lo, hi, ok := val(c)
			if !ok {
				continue
			}
			pts.x = append(pts.x, l.x(c))
			pts.y = append(pts.y, lo)
			pts.lo = append(pts.lo, lo)
			pts.hi = append(pts.hi, hi)
		}
		if pts.Len() == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		s.GlyphStyle.Color = palette[fi%len(palette)]
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(3.5)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		eb.LineStyle.Color = palette[fi%len(palette)]
		eb.LineStyle.Width = vg.Points(1.5)
		p.Add(eb, s)
		p.Legend.Add(f, s)
	}
	return p, nil
}

// Plots renders a sweep's pictures from its report alone, by file name:
// probability, exposure, data (what reached the resource), tradeoff (cost
// against safety, one point a cell) and cost (safety above latency above
// refusals, aligned on the same configuration axis). They are a function of
// sweep.json, byte for byte, so the docs generator can keep the committed
// ones current. With svg false only the PNGs, which the page shows, are
// drawn: an SVG embeds its font, and a row's exposure SVG runs to 6 MB.
func Plots(r *Report, svg bool) (map[string][]byte, error) {
	l := newLayout(r)
	w := vg.Length(math.Max(9, 1.4*float64(len(l.configs))+3)) * vg.Inch
	files := map[string][]byte{}
	render := func(p *plot.Plot, w, h vg.Length, base string) error {
		formats := []string{"png"}
		if svg {
			formats = append(formats, "svg")
		}
		return renderFormats(files, p, w, h, base, formats)
	}
	prob, err := probabilityPlot(r, l)
	if err != nil {
		return nil, err
	}
	if err := render(prob, w, 5*vg.Inch, "probability"); err != nil {
		return nil, err
	}
	exp, err := exposurePlot(r, l)
	if err != nil {
		return nil, err
	}
	if err := render(exp, w, 5*vg.Inch, "exposure"); err != nil {
		return nil, err
	}
	data, err := dataPlot(r, l)
	if err != nil {
		return nil, err
	}
	if err := render(data, w, 5*vg.Inch, "data"); err != nil {
		return nil, err
	}
	lat, avail, err := tradeoffPlots(r, l)
	if err != nil {
		return nil, err
	}
	if err := renderTiles(files, []*plot.Plot{lat, avail}, 2, 14*vg.Inch, 6*vg.Inch, "tradeoff"); err != nil {
		return nil, err
	}
	safety, err := probabilityPlot(r, l)
	if err != nil {
		return nil, err
	}
	safety.Title.Text = "safety: P(double grant per failover)"
	latency, err := valuePlot(r, l, "cost: granted acquire latency, p50 (dot) to p99 (bar top)", "ms",
		func(c CellStats) (float64, float64, bool) {
			return c.AcquireOKMs.P50, c.AcquireOKMs.P99, c.AcquireOKMs.Count > 0
		})
	if err != nil {
		return nil, err
	}
	av, err := valuePlot(r, l, "cost: acquires refused by errors (dot) and refused or timed out (bar top), %", "% of acquires",
		func(c CellStats) (float64, float64, bool) {
			return 100 * c.RefusedShare, 100 * (c.RefusedShare + c.UnknownShare), c.Acquires.Total > 0
		})
	if err != nil {
		return nil, err
	}
	stack := []*plot.Plot{safety, latency, av}
	if r.Plan.HasDeployments() {
		// A comparison of deployments: what reached the data, beside what
		// the lock service did.
		safety.Title.Text = "safety: P(double grant per opportunity: failover or fault)"
		st, err := dataPlot(r, l)
		if err != nil {
			return nil, err
		}
		stack = []*plot.Plot{safety, st, latency, av}
	}
	if err := renderTiles(files, stack, 1, w, vg.Length(4*len(stack))*vg.Inch, "cost"); err != nil {
		return nil, err
	}
	return files, nil
}

// WritePlots writes Plots into dir, SVGs too.
func WritePlots(dir string, r *Report) error {
	files, err := Plots(r, true)
	if err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("save %s: %w", name, err)
		}
	}
	return nil
}

// dataPlot: P(stale write accepted per opportunity) with its upper bound,
// what the fence (or its absence) let reach the resource: a double grant
// that no stale write followed corrupted nothing.
func dataPlot(r *Report, l layout) (*plot.Plot, error) {
	return valuePlot(r, l, "data: P(stale write accepted per opportunity) % (dot), 95% upper bound (bar top)", "%",
		func(c CellStats) (float64, float64, bool) {
			if c.PStale == nil {
				return 0, 0, false
			}
			return 100 * *c.PStale, 100 * c.PStaleHigh, true
		})
}

// tradeoffPlots: the operator's trade-off in one look, one point a cell:
// P(double grant) along x against what a grant costs (p99 of granted
// acquires) and how often the lock answered at all (availability). A
// setting worth its cost sits left; one that buys nothing sits right and up.
func tradeoffPlots(r *Report, l layout) (*plot.Plot, *plot.Plot, error) {
	lat, err := tradeoffPlot(r, l, "cost against safety: granted acquire p99", "granted acquire p99, ms",
		func(c CellStats) (float64, bool) { return c.AcquireOKMs.P99, c.AcquireOKMs.Count > 0 })
	if err != nil {
		return nil, nil, err
	}
	avail, err := tradeoffPlot(r, l, "cost against safety: availability", "acquires answered by a working lock, %",
		func(c CellStats) (float64, bool) { return 100 * c.Availability, c.Acquires.Total > 0 })
	if err != nil {
		return nil, nil, err
	}
	avail.Y.Max = 100
	// One legend, where the points are not: the colours are the same in
	// both panels, and a lock that answers less than half its acquires
	// is rare.
	lat.Legend = plot.NewLegend()
	avail.Legend.Top = false
	return lat, avail, nil
}

func tradeoffPlot(r *Report, l layout, title, ylabel string, y func(CellStats) (float64, bool)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "P(double grant per opportunity), %"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max, p.Y.Min = 0, 112, 0 // room for the labels of the cells at 100%
	p.Add(plotter.NewGrid())
	for fi, f := range l.faults {
		var xy plotter.XYs
		var labels []string
		for _, c := range r.Cells {
			v, ok := y(c)
			if c.Fault != f || c.P == nil || !ok {
				continue
			}
			xy = append(xy, plotter.XY{X: 100 * *c.P, Y: v})
			labels = append(labels, c.Config)
		}
		if len(xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		s.GlyphStyle.Color = palette[fi%len(palette)]
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(4)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Color = palette[fi%len(palette)]
			lb.TextStyle[i].Font.Size = vg.Points(7)
		}
		lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-3)}
		p.Add(s, lb)
		p.Legend.Add(f, s)
	}
	return p, nil
}

// renderFormats draws p into files in each format.
func renderFormats(files map[string][]byte, p *plot.Plot, w, h vg.Length, base string, formats []string) error {
	for _, ext := range formats {
		wt, err := p.WriterTo(w, h, ext)
		if err != nil {
			return fmt.Errorf("draw %s.%s: %w", base, ext, err)
		}
		var b bytes.Buffer
		if _, err := wt.WriteTo(&b); err != nil {
			return fmt.Errorf("draw %s.%s: %w", base, ext, err)
		}
		files[base+"."+ext] = b.Bytes()
	}
	return nil
}

// renderTiles draws plots on one canvas, cols a row, with aligned axes (PNG
// only: gonum's Align draws onto one canvas, and the PNG is what index.html
// shows).
func renderTiles(files map[string][]byte, ps []*plot.Plot, cols int, w, h vg.Length, base string) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range ps {
		grid[i/cols][i%cols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6), PadX: vg.Points(18), PadY: vg.Points(12)}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range ps {
		p.Draw(canvases[i/cols][i%cols])
	}
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return fmt.Errorf("draw %s.png: %w", base, err)
	}
	files[base+".png"] = b.Bytes()
	return nil
}
