package app_test

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeSLOReport writes BenchmarkHoldSLO's steps into dir: slo.md, a table for BENCHMARKS.md, and slo.html,
// the latency curves (p50 and p99 against the offered rate, both axes logarithmic) as a self-contained page.
func writeSLOReport(dir string, job sloJob, steps []sloStep, best []float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b sloStep) int {
		return cmp.Or(cmp.Compare(a.Design, b.Design), cmp.Compare(a.Rate, b.Rate))
	})
	var md strings.Builder
	fmt.Fprintf(&md, "Open loop, %v a step, %d workers (keep-alive connections) per design; target p99 ≤ %v with "+
		"under %.1f%% errors; a rate fails when two tries miss. Highest passing rate: booking %.0f/s, row-lock %.0f/s; "+
		"the floor (a server doing no work) %.0f/s.\n\n", job.Step, len(job.Tokens), job.SLO, job.MaxErrors*100, best[0],
		best[1], best[2])
	md.WriteString("| design | offered/s | answered/s | p50 | p99 | max | errors | sent late p99 | in flight max | generator CPU | meets target |\n")
	md.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, s := range sorted {
		verdict := "yes"
		if !s.Pass {
			verdict = "no"
		}
		verdict += s.notes()
		fmt.Fprintf(&md, "| %s | %.0f | %.0f | %v | %v | %v | %d | %v | %d | %.0f%% | %s |\n", sloDesigns[s.Design],
			s.Rate, float64(s.Decisions)/s.Elapsed.Seconds(), ms(s.P50), ms(s.P99), ms(s.Max), s.Errors,
			ms(s.LateP99), s.MaxInFlight, s.GeneratorCPU*100, verdict)
	}
	if err := os.WriteFile(filepath.Join(dir, "slo.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	page := fmt.Sprintf(`<!doctype html><html lang="en"><meta charset="utf-8"><title>Holds at a latency SLO</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}svg text{font-size:11px}</style>
<h1>Holds at a latency SLO</h1><p>%s</p>%s</html>
`, html.EscapeString(strings.SplitN(md.String(), "\n", 2)[0]), sloChart(sorted, job.SLO))
	return os.WriteFile(filepath.Join(dir, "slo.html"), []byte(page), 0o644)
}

// sloChart draws p50 (dashed) and p99 (solid) of each design against the offered rate as an inline SVG, with the
// target as a red line; of a rate tried twice it draws the try with the lower p99. Hand-drawn so the page opens
// from a file with no network. steps are sorted by design and rate.
func sloChart(steps []sloStep, slo time.Duration) string {
	var tries []sloStep
	for _, s := range steps {
		if n := len(tries); n > 0 && tries[n-1].Design == s.Design && tries[n-1].Rate == s.Rate {
			if s.P99 < tries[n-1].P99 {
				tries[n-1] = s
			}
			continue
		}
		tries = append(tries, s)
	}
	steps = tries
	const w, h, l, r, t, bt = 760, 360, 60, 120, 20, 40
	minX, maxX, minY, maxY := math.Inf(1), 0.0, 1.0, float64(slo.Milliseconds())*4
	for _, s := range steps {
		minX, maxX = math.Min(minX, s.Rate), math.Max(maxX, s.Rate)
		maxY = math.Max(maxY, float64(s.P99)/1e6)
	}
	if len(steps) == 0 {
		return ""
	}
	lx0, lx1 := math.Log10(minX/1.2), math.Log10(maxX*1.2)
	ly0, ly1 := math.Log10(minY/2), math.Log10(maxY*1.5)
	x := func(v float64) float64 { return l + (math.Log10(v)-lx0)/(lx1-lx0)*(w-l-r) }
	y := func(v float64) float64 {
		return t + (h - t - bt) - (math.Log10(math.Max(v, minY/2))-ly0)/(ly1-ly0)*(h-t-bt)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="p50 and p99 latency against offered rate">`, w, h, w, h)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`, l, t, w-l-r, h-t-bt)
	for d := math.Pow(10, math.Floor(lx0)); d < math.Pow(10, lx1); d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v > math.Pow(10, lx0) && v < math.Pow(10, lx1) {
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%g</text>`,
					x(v), x(v), t, h-bt, x(v), h-bt+14, v)
			}
		}
	}
	for d := math.Pow(10, math.Floor(ly0)); d < math.Pow(10, ly1); d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v > math.Pow(10, ly0) && v < math.Pow(10, ly1) {
				fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%g ms</text>`,
					l, w-r, y(v), y(v), l-4, y(v)+4, v)
			}
		}
	}
	target := float64(slo.Milliseconds())
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#b3261e" stroke-dasharray="5 3"/><text x="%d" y="%.1f" fill="#b3261e">p99 target</text>`,
		l, w-r, y(target), y(target), w-r+4, y(target)+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">offered holds per second (log)</text>`, (w+l-r)/2, h-6)
	colors := []string{"#1a5fb4", "#c64600", "#777777"}
	for d, name := range sloDesigns {
		for _, q := range []struct {
			label string
			dash  string
			at    func(sloStep) time.Duration
		}{{"p99", "", func(s sloStep) time.Duration { return s.P99 }},
			{"p50", ` stroke-dasharray="3 3"`, func(s sloStep) time.Duration { return s.P50 }}} {
			var pts []string
			var last [2]float64
			for _, s := range steps {
				if s.Design == d && s.Decisions > 0 {
					last = [2]float64{x(s.Rate), y(float64(q.at(s)) / 1e6)}
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", last[0], last[1]))
				}
			}
			if len(pts) == 0 {
				continue
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, colors[d%len(colors)], q.dash, strings.Join(pts, " "))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s %s</text>`, last[0]+6, last[1]+4, colors[d%len(colors)], name, q.label)
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// The report has a row and a curve for each design and the floor, and names the floor's rate.
func TestWriteSLOReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	job := sloJob{Tokens: make([]string, 4), Step: time.Second, SLO: 50 * time.Millisecond, MaxErrors: 0.001}
	var steps []sloStep
	for d := range sloDesigns {
		for _, rate := range []float64{250, 500} {
			steps = append(steps, sloStep{Design: d, Rate: rate, Sent: int(rate), Decisions: int(rate),
				Elapsed: time.Second, P50: time.Millisecond, P99: 20 * time.Millisecond, Workers: 4, Pass: true})
		}
	}
	if err := writeSLOReport(dir, job, steps, []float64{500, 250, 500}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "slo.md"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "slo.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sloDesigns {
		if got := strings.Count(string(md), "| "+name+" |"); got != 2 {
			t.Errorf("slo.md has %d rows of %s, want 2:\n%s", got, name, md)
		}
		if !strings.Contains(string(page), ">"+name+" p99<") {
			t.Errorf("slo.html has no p99 curve of %s", name)
		}
	}
	if !strings.Contains(string(md), "a server doing no work) 500/s") {
		t.Errorf("slo.md does not name the floor's rate:\n%s", md)
	}
}
