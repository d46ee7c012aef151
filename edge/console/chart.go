package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flashseat/flashseat/shared/salereport"
)

// The report's charts, drawn here as SVG on the server: the page needs no script and no charting library, prints
// as it shows, and each chart is an image (role="img") whose aria-label says in words what it shows, for a screen
// reader and for whoever reads the printout's text. report.html lays the parts out; this file only does the
// arithmetic of where each line, bar and tick goes.

// chart is one SVG figure.
type chart struct {
	ID, Title, Label string // Label: the aria-label, what the chart shows in words
	W, H             int
	Lines            []chartLine
	Bars             []chartBar
	XTicks, YTicks   []chartTick
	Legend           []chartLegend
	Plot             box // the plotting area inside the axes
}

type box struct{ X0, Y0, X1, Y1 float64 }

type chartLine struct {
	Class, Points string
}

type chartBar struct {
	Class      string
	X, Y, W, H string
	Text       string // a value label beside the bar ("" none)
	TX, TY     string
}

type chartTick struct {
	X, Y string
	Text string
}

// chartLegend is one series' key, drawn below the chart as a list (its line's colour and dash).
type chartLegend struct {
	Class, Text string
}

const (
	chartW = 640
	chartH = 260
)

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// plotBox is the plotting area of a chart of chartW x chartH, with room for the axes' labels.
func plotBox() box { return box{X0: 48, Y0: 12, X1: chartW - 12, Y1: chartH - 36} }

// niceMax is the least of 1, 2 or 5 times a power of ten that is at least v (and at least 1).
func niceMax(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// yTicks are five ticks from zero to top on the left axis.
func yTicks(b box, top float64) []chartTick {
	var out []chartTick
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := b.Y1 - (b.Y1-b.Y0)*float64(i)/4
		out = append(out, chartTick{X: f1(b.X0 - 6), Y: f1(y + 4), Text: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return out
}

// series is one line of a time-series chart.
type series struct {
	Name, Class string
	Points      []salereport.Point
}

// timeChart draws per-minute series as lines over the same minutes (every series has the same minutes).
func timeChart(id, title, what string, ss []series) chart {
	b := plotBox()
	c := chart{ID: id, Title: title, W: chartW, H: chartH, Plot: b}
	n := 0
	var top float64
	for _, s := range ss {
		n = max(n, len(s.Points))
		for _, p := range s.Points {
			top = max(top, float64(p.Count))
		}
	}
	top = niceMax(top)
	x := func(i int) float64 {
		if n <= 1 {
			return (b.X0 + b.X1) / 2
		}
		return b.X0 + (b.X1-b.X0)*float64(i)/float64(n-1)
	}
	y := func(v int64) float64 { return b.Y1 - (b.Y1-b.Y0)*float64(v)/top }
	var words []string
	for _, s := range ss {
		pts := make([]string, len(s.Points))
		var total, peak int64
		var peakAt time.Time
		for i, p := range s.Points {
			pts[i] = f1(x(i)) + "," + f1(y(p.Count))
			total += p.Count
			if p.Count > peak {
				peak, peakAt = p.Count, p.T
			}
		}
		if len(pts) == 1 { // one minute: a short flat stroke, so the value shows
			pts = []string{f1(x(0)-8) + "," + f1(y(s.Points[0].Count)), f1(x(0)+8) + "," + f1(y(s.Points[0].Count))}
		}
		c.Lines = append(c.Lines, chartLine{Class: s.Class, Points: strings.Join(pts, " ")})
		if len(ss) > 1 {
			c.Legend = append(c.Legend, chartLegend{Class: s.Class, Text: s.Name})
		}
		word := fmt.Sprintf("%s %d in all", s.Name, total)
		if what == "stood" {
			word = fmt.Sprintf("%s %d at the end", s.Name, last(s.Points))
		}
		if peak > 0 {
			word += fmt.Sprintf(", at most %d in the minute of %s", peak, peakAt.UTC().Format("15:04"))
		}
		words = append(words, word)
	}
	c.YTicks = yTicks(b, top)
	if n > 0 {
		first, end := ss[0].Points[0].T, ss[0].Points[n-1].T
		for _, i := range []int{0, n / 2, n - 1} {
			c.XTicks = append(c.XTicks, chartTick{X: f1(x(i)), Y: f1(b.Y1 + 18), Text: ss[0].Points[i].T.UTC().Format("15:04")})
			if n == 1 {
				break
			}
		}
		c.Label = fmt.Sprintf("%s, minute by minute from %s to %s UTC: %s.", title, first.UTC().Format("15:04"),
			end.UTC().Format("15:04"), strings.Join(words, "; "))
	} else {
		c.Label = title + ": no minutes recorded."
	}
	return c
}

func last(pts []salereport.Point) int64 {
	if len(pts) == 0 {
		return 0
	}
	return pts[len(pts)-1].Count
}

// waitChart draws the wait histogram: a bar per range of seconds.
func waitChart(w salereport.Waits) chart {
	b := plotBox()
	c := chart{ID: "chart-waits", Title: "Wait in line", W: chartW, H: chartH, Plot: b}
	var top float64
	for _, h := range w.Histogram {
		top = max(top, float64(h.Count))
	}
	top = niceMax(top)
	n := max(1, len(w.Histogram))
	bw := (b.X1 - b.X0) / float64(n)
	for i, h := range w.Histogram {
		hgt := (b.Y1 - b.Y0) * float64(h.Count) / top
		x := b.X0 + bw*float64(i)
		c.Bars = append(c.Bars, chartBar{Class: "bar", X: f1(x + 1), Y: f1(b.Y1 - hgt), W: f1(bw - 2), H: f1(hgt)})
		if i == 0 || i == n-1 || i == n/2 {
			c.XTicks = append(c.XTicks, chartTick{X: f1(x), Y: f1(b.Y1 + 18), Text: seconds(h.From)})
		}
	}
	if n > 0 && len(w.Histogram) > 0 {
		c.XTicks = append(c.XTicks, chartTick{X: f1(b.X1), Y: f1(b.Y1 + 18), Text: seconds(w.Histogram[n-1].To)})
	}
	c.YTicks = yTicks(b, top)
	if w.Count == 0 {
		c.Label = "Histogram of the wait in line: no fan was admitted from the line."
		return c
	}
	c.Label = fmt.Sprintf("Histogram of the wait in line of %d admitted fans, in bars of %s: half waited %s or less, "+
		"90%% %s or less, 99%% %s or less, the longest %s.", w.Count, seconds(w.Histogram[0].To-w.Histogram[0].From),
		seconds(w.P50), seconds(w.P90), seconds(w.P99), seconds(w.Max))
	return c
}

// funnelChart draws the funnel: a horizontal bar per step, as wide as the fans who reached it.
func funnelChart(f salereport.Funnel) chart {
	steps := []struct {
		name string
		n    int64
	}{{"joined", f.Joined}, {"admitted", f.Admitted}, {"held seats", f.Held}, {"bought", f.Bought}}
	c := chart{ID: "chart-funnel", Title: "Funnel", W: chartW, H: 40*len(steps) + 16}
	top := float64(max(1, f.Joined, f.Admitted, f.Held, f.Bought))
	const x0, x1 = 110.0, chartW - 80.0
	var words []string
	for i, s := range steps {
		y := 8 + 40*float64(i)
		w := (x1 - x0) * float64(s.n) / top
		c.Bars = append(c.Bars, chartBar{Class: "bar s" + strconv.Itoa(i), X: f1(x0), Y: f1(y), W: f1(max(w, 1)),
			H: "28", Text: strconv.FormatInt(s.n, 10), TX: f1(x0 + max(w, 1) + 6), TY: f1(y + 19)})
		c.YTicks = append(c.YTicks, chartTick{X: f1(x0 - 8), Y: f1(y + 19), Text: s.name})
		words = append(words, fmt.Sprintf("%d %s", s.n, s.name))
	}
	c.Label = "Funnel of the sale's fans: " + strings.Join(words, ", ") + "."
	return c
}

// seconds says a duration in seconds the way an operator reads it.
func seconds(s float64) string {
	switch {
	case s < 10:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s < 120:
		return strconv.FormatFloat(math.Round(s), 'f', 0, 64) + " s"
	}
	return (time.Duration(s) * time.Second).Round(time.Second).String()
}
