package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/flashseat/flashseat/loadtest"
)

// series is one line of a chart.
type series struct {
	Name   string
	Color  string
	Points []loadtest.Point
}

const (
	chartW, chartH = 720, 260
	padL, padR     = 56, 16
	padT, padB     = 28, 36
)

// niceMax rounds v up to 1, 2 or 5 times a power of ten so axes read well.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// lineChart draws series as an inline SVG with axes, ticks and a legend. Hand-drawn SVG keeps the page
// self-contained: it must open from a file with no network, so no chart library from a CDN.
// xmax fixes the x axis (the run's length) so every time chart lines up; mark draws the sale's opening.
func lineChart(title, xLabel, yLabel string, xmax, mark float64, ss []series) template.HTML {
	var ymax float64
	for _, s := range ss {
		for _, p := range s.Points {
			xmax, ymax = math.Max(xmax, p.T), math.Max(ymax, p.V)
		}
	}
	xmax, ymax = math.Max(xmax, 1), niceMax(ymax)
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	x := func(t float64) float64 { return padL + t/xmax*pw }
	y := func(v float64) float64 { return padT + ph - v/ymax*ph }

	var b strings.Builder
	frame(&b, title, ymax, y)
	if mark > 0 && mark < xmax {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#b3261e" stroke-dasharray="4 3"/>`, x(mark), x(mark), padT, padT+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="a" fill="#b3261e">sale opens</text>`, x(mark)+4, padT+ph-6)
	}
	for i := 0; i <= 6; i++ {
		t := xmax * float64(i) / 6
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="a" text-anchor="middle">%s</text>`, x(t), chartH-padB+16, num(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="a" text-anchor="middle">%s</text>`, padL+int(pw/2), chartH-4, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="12" y="%d" class="a" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, padT+int(ph/2), padT+int(ph/2), template.HTMLEscapeString(yLabel))
	for i, s := range ss {
		if len(s.Points) == 0 {
			continue
		}
		var pts strings.Builder
		for _, p := range s.Points {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p.T), y(p.V))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, s.Color, pts.String())
		lx := padL + 10 + i*150
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d" class="a">%s</text>`,
			lx, padT+4, s.Color, lx+16, padT+8, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped names only
}

// barChart draws a latency histogram, one bar per bucket, for each step side by side.
func barChart(title, xLabel string, bounds []time.Duration, hs map[loadtest.Step][]loadtest.Bucket, steps []loadtest.Step, colors []string) template.HTML {
	n := len(bounds)
	var ymax float64
	for _, st := range steps {
		for _, bk := range hs[st] {
			ymax = math.Max(ymax, float64(bk.Count))
		}
	}
	ymax = niceMax(ymax)
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	slot := pw / float64(n)
	bw := slot * 0.8 / float64(max(1, len(steps)))
	y := func(v float64) float64 { return padT + ph - v/ymax*ph }

	var b strings.Builder
	frame(&b, title, ymax, y)
	for i, le := range bounds {
		label := shortDur(le)
		if i == n-1 {
			label = "more"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="a" text-anchor="middle">%s</text>`, padL+slot*(float64(i)+0.5), chartH-padB+16, label)
	}
	for si, st := range steps {
		for i, bk := range hs[st] {
			if bk.Count == 0 {
				continue
			}
			x0 := padL + slot*float64(i) + slot*0.1 + bw*float64(si)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %d</title></rect>`,
				x0, y(float64(bk.Count)), bw, padT+ph-y(float64(bk.Count)), colors[si%len(colors)], st, shortDur(bk.Le), bk.Count)
		}
		lx := padL + 10 + si*110
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="8" fill="%s"/><text x="%d" y="%d" class="a">%s</text>`,
			lx, padT+2, colors[si%len(colors)], lx+16, padT+10, st)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="a" text-anchor="middle">%s, bucket upper bound</text>`, padL+int(pw/2), chartH-4, template.HTMLEscapeString(xLabel))
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and constant labels only
}

// frame opens the SVG with its title and the horizontal grid with y labels.
func frame(b *strings.Builder, title string, ymax float64, y func(float64) float64) {
	fmt.Fprintf(b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, chartW, chartH, chartW, chartH, template.HTMLEscapeString(title))
	fmt.Fprintf(b, `<text x="%d" y="18" class="t">%s</text>`, padL, template.HTMLEscapeString(title))
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="g"/>`, padL, chartW-padR, y(v), y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" class="a" text-anchor="end">%s</text>`, padL-6, y(v)+4, num(v))
	}
}

func num(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func shortDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%gs", d.Seconds())
	}
	return fmt.Sprintf("%gms", float64(d)/float64(time.Millisecond))
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":      loadtest.FormatDuration,
	"outcomes": outcomes,
	"never":    orNever,
	"p99words": p99Words,
	"fairness": fairness,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>flashseat load test: {{.S.Scenario.Name}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:4px 10px;border-bottom:1px solid #e3e6ec;text-align:right}
th{background:#f4f6f9}td:first-child,th:first-child,td.l{text-align:left}
.ok{color:#137333;font-weight:600}.bad{color:#b3261e;font-weight:600}.muted{color:#667}
svg{background:#fff;border:1px solid #e3e6ec;border-radius:6px;margin:6px 0}
svg .t{font:600 13px system-ui,sans-serif;fill:#1d2330}svg .a{font:11px system-ui,sans-serif;fill:#556}svg .g{stroke:#eceef2}
code{background:#f4f6f9;padding:1px 4px;border-radius:3px}
</style></head><body>
<h1>flashseat load test — {{.S.Scenario.Name}}</h1>
<div class="muted">{{.S.Scenario.Mode}} against <code>{{.S.Target}}</code>, show <code>{{.S.ShowID}}</code>, started {{.S.StartedAt.UTC.Format "2006-01-02 15:04:05 UTC"}}, elapsed {{dur .S.Elapsed}}; measured on {{.D.Machine.CPUs}} CPUs, {{.D.Machine.MemoryMB}} MB ({{.D.Machine.OS}}, {{.D.Machine.Go}}){{if .D.Command}}: <code>{{.D.Command}}</code>{{end}}</div>
<p>{{if .V}}<span class="bad">violations: {{len .V}}</span>{{else}}<span class="ok">violations: 0</span>{{end}}
 — fans {{.S.Scenario.Fans}}, seats {{.S.Scenario.Seats}}{{if eq (print .S.Scenario.Mode) "queue"}}, admitted {{.S.Admitted}}, confirmed {{.S.Confirmed}} bookings ({{.S.SeatsSold}} seats), sold out after {{never .S.SoldOutAfter}} from opening{{end}}</p>
{{if .V}}<h2>Violations</h2><ul>{{range .V}}<li><b>{{.Invariant}}</b>: {{.Detail}}</li>{{end}}</ul>{{end}}
{{if .D.Checked}}<p class="muted">Invariants checked: {{range $i, $c := .D.Checked}}{{if $i}}, {{end}}{{$c}}{{end}}</p>{{end}}
<h2>Steps</h2>
<table><tr><th>step</th><th>count</th><th>per s</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>outcomes</th></tr>
{{range .Steps}}<tr><td>{{.Name}}</td><td>{{.S.Count}}</td><td>{{printf "%.1f" .S.PerSecond}}</td><td>{{dur .S.P50}}</td><td>{{dur .S.P95}}</td><td>{{dur .S.P99}}</td><td>{{dur .S.Max}}</td><td class="l">{{outcomes .S.Outcomes}}</td></tr>
{{end}}{{with .S.QueueWait}}{{if .Count}}<tr><td>queue wait</td><td>{{.Count}}</td><td></td><td>{{dur .P50}}</td><td>{{dur .P95}}</td><td>{{dur .P99}}</td><td>{{dur .Max}}</td><td></td></tr>{{end}}{{end}}
</table>
<p>Fans by outcome: {{outcomes .S.FanOutcomes}}</p>
{{if .S.Reasons}}<ul>{{range $r, $n := .S.Reasons}}<li>{{$n}}× {{$r}}</li>{{end}}</ul>{{end}}
{{if .S.PayOutcomes}}<table><tr><th>paying</th><th>outcomes of fans who held seats</th></tr>
{{range $b, $m := .S.PayOutcomes}}<tr><td>{{$b}}</td><td class="l">{{outcomes $m}}</td></tr>{{end}}</table>{{end}}
{{if .Storm}}{{with .Storm}}<h2>Hold-storm</h2>
<table><tr><th>design</th><th>decisions</th><th>per s</th><th>p50</th><th>p99</th><th>other answers</th></tr>
<tr><td>flashseat (Redis Lua + ledger) at <code>{{.Target}}</code></td><td>{{.Decisions}}</td><td>{{printf "%.0f" .DecisionsPerSec}}</td><td>{{dur .P50}}</td><td>{{dur .P99}}</td><td>{{.Errors}}</td></tr>
{{with .Baseline}}<tr><td>row-lock baseline (SELECT … FOR UPDATE), in-process, no edge hop</td><td>{{.Decisions}}</td><td>{{printf "%.0f" .DecisionsPerSec}}</td><td>{{dur .P50}}</td><td>{{dur .P99}}</td><td>{{.Errors}}</td></tr>{{end}}
</table>{{if .Baseline}}<p><b>{{printf "%.1f" .ThroughputRatio}}×</b> the baseline's decisions per second; {{p99words .P99Ratio}}.</p>{{end}}{{end}}{{end}}
{{if eq (print .S.Scenario.Mode) "queue"}}<h2>Queue</h2>
<p>Fairness: {{fairness .S.Fairness}}.
Tokens: {{.S.Tokens.Admitted}} admitted, {{.S.Tokens.Accepted}} accepted, {{len .S.Tokens.Refused}} refused. Probes without admission: {{.S.Tokens.Probes}}, {{len .S.Tokens.Allowed}} let through, {{.S.Tokens.Unclear}} unclear.</p>{{end}}
<h2>Charts</h2>
{{.HoldChart}}
{{if .QueueChart}}{{.QueueChart}}{{end}}
{{.SeatChart}}
{{.Hist}}
{{if .WaitHist}}{{.WaitHist}}{{end}}
{{if .BaseHist}}{{.BaseHist}}{{end}}
<p class="muted">Scenario: {{printf "%+v" .S.Scenario}}</p>
</body></html>
`))

type stepRow struct {
	Name string
	S    loadtest.Stats
}

// HTML writes the self-contained report page.
func HTML(w io.Writer, d Document) error {
	s := d.Summary
	var rows []stepRow
	for _, st := range loadtest.StepOrder {
		if x, ok := s.Steps[st]; ok {
			rows = append(rows, stepRow{string(st), x})
		}
	}
	var waiting, active, avail, held, booked []loadtest.Point
	for _, q := range s.Timeline {
		t := q.At.Seconds()
		if q.Waiting >= 0 {
			waiting = append(waiting, loadtest.Point{T: t, V: float64(q.Waiting)})
			active = append(active, loadtest.Point{T: t, V: float64(q.Active)})
		}
		if q.Available >= 0 {
			avail = append(avail, loadtest.Point{T: t, V: float64(q.Available)})
			held = append(held, loadtest.Point{T: t, V: float64(q.Held)})
			booked = append(booked, loadtest.Point{T: t, V: float64(q.Booked)})
		}
	}
	xmax, mark := s.Elapsed.Seconds(), s.SaleOpens.Seconds()
	data := map[string]any{
		"S": s, "D": d, "V": d.Violations, "Steps": rows, "Storm": s.Storm,
		"HoldChart": lineChart("Holds per second", "seconds since start", "per second", xmax, mark, []series{
			{"held (201)", "#1a73e8", s.HoldsPerSecond}, {"conflict (409)", "#e8710a", s.ConflictsPerSecond}}),

		"SeatChart": lineChart("Seats", "seconds since start", "seats", xmax, mark, []series{
			{"available", "#1a73e8", avail}, {"held", "#e8710a", held}, {"booked", "#137333", booked}}),
		"Hist": barChart("Latency histogram", "latency", loadtest.HistogramBounds, s.Histograms,
			[]loadtest.Step{loadtest.StepJoin, loadtest.StepSeatMap, loadtest.StepHold, loadtest.StepPay},
			[]string{"#9334e6", "#1a73e8", "#e8710a", "#137333"}),
	}
	if s.Storm != nil && s.Storm.Baseline != nil {
		data["BaseHist"] = barChart("Hold latency: flashseat vs row-lock baseline", "latency", loadtest.HistogramBounds, map[loadtest.Step][]loadtest.Bucket{
			"flashseat": s.Storm.Histogram, "row-lock": s.Storm.Baseline.Histogram},
			[]loadtest.Step{"flashseat", "row-lock"}, []string{"#1a73e8", "#b3261e"})
	}
	if len(waiting) > 0 { // a hold-storm has no queue to draw
		data["QueueChart"] = lineChart("Queue depth", "seconds since start", "fans", xmax, mark, []series{
			{"waiting", "#9334e6", waiting}, {"active (admitted)", "#137333", active}})
	}
	if len(s.WaitHistogram) > 0 {
		data["WaitHist"] = barChart("Queue wait (from joining or the opening, whichever is later, to admission)", "wait",
			loadtest.WaitBounds, map[loadtest.Step][]loadtest.Bucket{"fans": s.WaitHistogram}, []loadtest.Step{"fans"},
			[]string{"#9334e6"})
	}
	return page.Execute(w, data)
}
