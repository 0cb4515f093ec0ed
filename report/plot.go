package report

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

var keyColors = []color.NRGBA{
	{66, 133, 244, 255}, {15, 157, 88, 255}, {171, 71, 188, 255}, {0, 172, 193, 255},
	{255, 112, 67, 255}, {158, 157, 36, 255}, {92, 107, 192, 255}, {240, 98, 146, 255},
}

var (
	red        = color.NRGBA{219, 68, 55, 255}
	faultC     = color.NRGBA{244, 180, 0, 60}
	doubleC    = color.NRGBA{219, 68, 55, 90}
	faultTextC = color.NRGBA{120, 90, 0, 255}
)

// Figure is a drawn timeline: the plot's data area, the fault labels on
// staggered rows between the title and the data (never over a client's row),
// the legend in a column of its own on the right, and, in the SVG, a hover
// title on every hold, mark and fault.
type Figure struct {
	tl     Timeline
	title  string
	p      *plot.Plot
	legend plot.Legend
	hot    []hotspot
}

// hotspot is a region of the drawing with a hover title, in canvas
// coordinates (points, origin bottom left).
type hotspot struct {
	class string
	rect  vg.Rectangle
	attrs [][2]string
	title string
}

// Plot lays the timeline out; Save writes it as PNG and SVG.
func (tl Timeline) Plot(title string) (*Figure, error) {
	f := &Figure{tl: tl, title: title}
	p := plot.New()
	p.X.Label.Text = "seconds since the first operation (true time)"
	p.Y.Label.Text = "client"
	p.X.Label.Padding = vg.Points(6)
	p.Y.Label.Padding = vg.Points(6)
	rows := tl.rows()
	p.Y.Min, p.Y.Max = -1, float64(rows)
	var ticks []plot.Tick
	step := int(math.Max(1, float64(rows)/16))
	for c := 0; c < rows; c += step {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var out []plot.Tick
		for _, t := range secondTicks(lo, hi) {
			out = append(out, plot.Tick{Value: t.v, Label: t.label})
		}
		return out
	})
	p.Add(&bands{f: f}, &holds{f: f}, &verdicts{f: f})
	f.p = p

	lg := plot.NewLegend()
	lg.Top, lg.Left = true, true
	lg.Padding = vg.Points(4)
	lg.Add("lock hold (colour: key)", thumb(func(c *draw.Canvas) {
		c.FillPolygon(keyColors[0], boxPts(c.Min.X, c.Max.X, c.Center().Y, vg.Points(3)))
	}))
	lg.Add("hold in a double grant", thumb(func(c *draw.Canvas) {
		pts := boxPts(c.Min.X, c.Max.X, c.Center().Y, vg.Points(3))
		c.FillPolygon(keyColors[0], pts)
		c.StrokeLines(draw.LineStyle{Color: red, Width: vg.Points(1.5)}, append(pts, pts[0]))
	}))
	lg.Add("fault in force", thumb(func(c *draw.Canvas) { c.FillPolygon(faultC, rectPts(c.Rectangle)) }))
	lg.Add("two holders at once", thumb(func(c *draw.Canvas) { c.FillPolygon(doubleC, rectPts(c.Rectangle)) }))
	lg.Add("write accepted", thumb(func(c *draw.Canvas) {
		c.DrawGlyph(draw.GlyphStyle{Shape: draw.CircleGlyph{}, Color: color.Black, Radius: vg.Points(1.5)}, c.Center())
	}))
	lg.Add("read or write turned away by the fence", thumb(func(c *draw.Canvas) {
		c.DrawGlyph(draw.GlyphStyle{Shape: draw.CrossGlyph{}, Color: red, Radius: vg.Points(3)}, c.Center())
	}))
	lg.Add("stale write accepted", thumb(func(c *draw.Canvas) {
		c.DrawGlyph(draw.GlyphStyle{Shape: draw.TriangleGlyph{}, Color: red, Radius: vg.Points(3.5)}, c.Center())
	}))
	f.legend = lg
	return f, nil
}

type thumb func(c *draw.Canvas)

func (t thumb) Thumbnail(c *draw.Canvas) { t(c) }

func rectPts(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
}

func boxPts(x0, x1, y, half vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}}
}

func (tl Timeline) rows() int {
	if tl.Clients == 0 {
		return 1
	}
	return tl.Clients
}

func (tl Timeline) sec(t int64) float64 { return float64(t-tl.Start) / 1e9 }

// Size is the figure's size: 14 inches wide, a row per client, and room for
// the fault labels' rows.
func (f *Figure) Size() (w, h vg.Length) {
	w = 14 * vg.Inch
	h = vg.Length(math.Max(4, math.Min(12, 2+float64(f.tl.Clients)*0.35))) * vg.Inch
	return w, h + f.stripHeight(w)
}

const (
	margin   = vg.Length(6)  // around the whole figure
	labelGap = vg.Length(10) // between two fault labels on one row
)

func (f *Figure) labelStyle() draw.TextStyle {
	sty := f.p.Y.Tick.Label
	sty.Color = faultTextC
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	sty.Rotation = 0
	return sty
}

func (f *Figure) laneHeight() vg.Length {
	return f.labelStyle().Rectangle("Mg").Size().Y + vg.Points(4)
}

func (f *Figure) titleBlock() vg.Length {
	if f.title == "" {
		return margin
	}
	return f.p.Title.TextStyle.Rectangle(f.title).Size().Y + 2*margin
}

func (f *Figure) legendWidth() vg.Length {
	return f.legend.Rectangle(draw.Canvas{}).Size().X + 3*margin
}

// labelRow is a fault label placed on a row of the strip above the data.
type labelRow struct {
	x    vg.Length
	lane int
	text string
}

// placeLabels puts every fault label at its fault's start, on the lowest row
// where it clears the labels already there.
func (f *Figure) placeLabels(dataC draw.Canvas) ([]labelRow, int) {
	trX, _ := f.p.Transforms(&dataC)
	sty := f.labelStyle()
	var out []labelRow
	var ends []vg.Length
	for _, b := range f.tl.Faults {
		w := sty.Rectangle(b.Label).Size().X
		x := trX(f.tl.sec(b.From))
		if x+w > dataC.Max.X {
			x = dataC.Max.X - w
		}
		if x < dataC.Min.X {
			x = dataC.Min.X
		}
		lane := 0
		for lane < len(ends) && ends[lane]+labelGap > x {
			lane++
		}
		if lane == len(ends) {
			ends = append(ends, 0)
		}
		ends[lane] = x + w
		out = append(out, labelRow{x: x, lane: lane, text: b.Label})
	}
	return out, len(ends)
}

func (f *Figure) plotArea(c draw.Canvas, strip vg.Length) draw.Canvas {
	return draw.Crop(c, margin, -f.legendWidth(), margin, -(f.titleBlock() + strip))
}

// stripHeight is the height of the fault labels' rows for a figure w wide.
func (f *Figure) stripHeight(w vg.Length) vg.Length {
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: 10 * vg.Inch}}}
	_, lanes := f.placeLabels(f.p.DataCanvas(f.plotArea(c, 0)))
	if lanes == 0 {
		return 0
	}
	return vg.Length(lanes)*f.laneHeight() + vg.Points(4)
}

func (f *Figure) draw(c draw.Canvas) {
	f.hot = f.hot[:0]
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if f.title != "" {
		sty := f.p.Title.TextStyle
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - margin}, f.title)
	}
	strip := f.stripHeight(c.Size().X)
	area := f.plotArea(c, strip)
	f.p.Draw(area)
	dataC := f.p.DataCanvas(area)
	labels, _ := f.placeLabels(dataC)
	sty, lh := f.labelStyle(), f.laneHeight()
	for _, l := range labels {
		c.FillText(sty, vg.Point{X: l.x, Y: dataC.Max.Y + vg.Points(3) + vg.Length(l.lane)*lh}, l.text)
	}
	lc := draw.Crop(c, c.Size().X-f.legendWidth()+2*margin, -margin, 0, -f.titleBlock())
	f.legend.Draw(lc)
}

// Save writes base.png and base.svg; the SVG carries the hover titles.
func (f *Figure) Save(base string) error {
	w, h := f.Size()
	img := vgimg.New(w, h)
	f.draw(draw.New(img))
	var png bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&png); err != nil {
		return fmt.Errorf("draw %s.png: %w", base, err)
	}
	if err := runfolder.WriteFileAtomic(base+".png", png.Bytes(), 0o644); err != nil {
		return err
	}
	// The fonts go into the SVG, so that a browser lays the text out as
	// gonum measured it (a substitute font is wider, and labels would touch).
	svg := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	f.draw(draw.New(svg))
	var buf bytes.Buffer
	if _, err := svg.WriteTo(&buf); err != nil {
		return fmt.Errorf("draw %s.svg: %w", base, err)
	}
	out := withHover(buf.String(), f.hot, h)
	return runfolder.WriteFileAtomic(base+".svg", []byte(out), 0o644)
}

// withHover adds a transparent rectangle with a <title> over every hotspot,
// last in the document so that it is on top; gonum's SVG backend draws
// paths only.
func withHover(svg string, hot []hotspot, h vg.Length) string {
	var b strings.Builder
	b.WriteString(`<g id="hover" fill="#000" fill-opacity="0">` + "\n")
	for _, s := range hot {
		r := s.rect
		fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"`, s.class,
			r.Min.X.Points(), (h - r.Max.Y).Points(), r.Size().X.Points(), r.Size().Y.Points())
		for _, a := range s.attrs {
			fmt.Fprintf(&b, ` data-%s="%s"`, a[0], html.EscapeString(a[1]))
		}
		fmt.Fprintf(&b, "><title>%s</title></rect>\n", html.EscapeString(s.title))
	}
	b.WriteString("</g>\n")
	i := strings.LastIndex(svg, "</svg>")
	if i < 0 {
		return svg
	}
	return svg[:i] + b.String() + svg[i:]
}

func (f *Figure) addHot(class string, r vg.Rectangle, title string, attrs ...[2]string) {
	f.hot = append(f.hot, hotspot{class: class, rect: r, title: title, attrs: attrs})
}

// bands shades fault intervals (yellow) and double holders (red) behind the bars.
type bands struct{ f *Figure }

func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	tl := b.f.tl
	trX, _ := p.Transforms(&c)
	y0, y1 := c.Min.Y, c.Max.Y
	shade := func(from, to int64, col color.Color, minW vg.Length) vg.Rectangle {
		x0, x1 := trX(tl.sec(from)), trX(tl.sec(to))
		if x1-x0 < minW {
			x1 = x0 + minW
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		return vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}
	}
	for _, f := range tl.Faults {
		r := shade(f.From, f.To, faultC, vg.Points(1.5))
		title := fmt.Sprintf("%s from %s to %s", f.Label, tl.secs(f.From), tl.secs(f.To))
		if f.From == f.To {
			title = fmt.Sprintf("%s at %s", f.Label, tl.secs(f.From))
		}
		b.f.addHot("fault", r, title)
	}
	for _, d := range tl.Doubles {
		r := shade(d.From, d.To, doubleC, vg.Points(2))
		b.f.addHot("double", r, fmt.Sprintf("clients %d (older) and %d (newer) both held the lock from %s to %s (%s; cause: %s)",
			d.Client, d.New, tl.secs(d.From), tl.secs(d.To), checker.HumanDuration(float64(d.To-d.From)/1e6), d.Label))
	}
}

func (b *bands) DataRange() (xmin, xmax, ymin, ymax float64) {
	tl := b.f.tl
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, f := range tl.Faults {
		xmin, xmax = math.Min(xmin, tl.sec(f.From)), math.Max(xmax, tl.sec(f.To))
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 0
	}
	return xmin, xmax, -1, float64(tl.rows())
}

// minHold is the narrowest a hold is drawn: a newer holder turned away by
// the fence may hold for a few milliseconds, and must still show.
const minHold = vg.Length(3)

// holds draws each hold as a thick bar in its client's row, coloured by key;
// holds that take part in a double grant are outlined in red.
type holds struct{ f *Figure }

func (h *holds) Plot(c draw.Canvas, p *plot.Plot) {
	tl := h.f.tl
	trX, trY := p.Transforms(&c)
	half := vg.Points(3)
	for _, hd := range tl.Holds {
		x0, x1 := trX(tl.sec(hd.From)), trX(tl.sec(hd.To))
		if x1-x0 < minHold {
			x1 = x0 + minHold
		}
		y := trY(float64(hd.Client))
		pts := boxPts(x0, x1, y, half)
		c.FillPolygon(keyColors[hd.KeyIndex%len(keyColors)], pts)
		if hd.Invalid {
			c.StrokeLines(draw.LineStyle{Color: red, Width: vg.Points(1.5)}, append(pts, pts[0]))
		}
		h.f.addHot("hold", vg.Rectangle{Min: vg.Point{X: x0, Y: y - half}, Max: vg.Point{X: x1, Y: y + half}}, tl.holdTitle(hd),
			[2]string{"client", fmt.Sprint(hd.Client)}, [2]string{"token", hd.Token}, [2]string{"fence", fmt.Sprint(hd.Fence)},
			[2]string{"double", hd.Double})
	}
}

func (h *holds) DataRange() (xmin, xmax, ymin, ymax float64) {
	tl := h.f.tl
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, hd := range tl.Holds {
		xmin, xmax = math.Min(xmin, tl.sec(hd.From)), math.Max(xmax, tl.sec(hd.To))
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	return xmin, xmax, -1, float64(tl.rows())
}

// verdicts draws the resource's verdicts: accepted writes as dots on the bar,
// refusals (crosses) and stale writes that landed (triangles) just above
// it, so that they never hide a hold.
type verdicts struct{ f *Figure }

func (m *verdicts) Plot(c draw.Canvas, p *plot.Plot) {
	tl := m.f.tl
	trX, trY := p.Transforms(&c)
	pitch := trY(1) - trY(0)
	above := vg.Length(math.Min(8, float64(pitch)*0.4))
	accepted := 0
	for _, w := range tl.Writes {
		if w.Verdict == history.Accepted && !w.Stale {
			accepted++
		}
	}
	ws := append([]Mark(nil), tl.Writes...)
	// Dots first, refusals and stale writes on top of them.
	rank := func(w Mark) int {
		if w.Verdict == history.Accepted && !w.Stale {
			return 0
		}
		return 1
	}
	sort.SliceStable(ws, func(i, j int) bool { return rank(ws[i]) < rank(ws[j]) })
	for _, w := range ws {
		x, y := trX(tl.sec(w.Time)), trY(float64(w.Client))
		var sty draw.GlyphStyle
		switch {
		case w.Verdict == history.Accepted && w.Stale:
			sty = draw.GlyphStyle{Shape: draw.TriangleGlyph{}, Color: red, Radius: vg.Points(3.5)}
			y += above
		case w.Verdict == history.Rejected:
			sty = draw.GlyphStyle{Shape: draw.CrossGlyph{}, Color: red, Radius: vg.Points(3)}
			y += above
		case w.Verdict == history.Accepted:
			if accepted >= 2000 {
				continue
			}
			sty = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Color: color.Black, Radius: vg.Points(1.2)}
		default:
			continue
		}
		x1 := x
		if w.Until > w.Time {
			x1 = trX(tl.sec(w.Until))
			if x1-x > vg.Points(2) {
				c.StrokeLine2(draw.LineStyle{Color: red, Width: vg.Points(1)}, x, y, x1, y)
			}
		}
		c.DrawGlyph(sty, vg.Point{X: x, Y: y})
		r := sty.Radius + vg.Points(1)
		m.f.addHot("mark", vg.Rectangle{Min: vg.Point{X: x - r, Y: y - r}, Max: vg.Point{X: max(x1, x) + r, Y: y + r}}, tl.markTitle(w),
			[2]string{"client", fmt.Sprint(w.Client)}, [2]string{"token", w.Token}, [2]string{"verdict", w.Verdict})
	}
}

func (m *verdicts) DataRange() (xmin, xmax, ymin, ymax float64) {
	tl := m.f.tl
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, w := range tl.Writes {
		xmin, xmax = math.Min(xmin, tl.sec(w.Time)), math.Max(xmax, tl.sec(w.Until))
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	return xmin, xmax, -1, float64(tl.rows())
}
