package e2e

import (
	"bytes"
	"compress/zlib"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// reportInBrowser: the operator signs in to the console, picks the show in the Reports panel and opens its Report
// view through the real edge and booking (any console error fails the test). Its four charts are images whose
// labels say what the sale did, drawn with their lines and bars; the CSV link downloads the report; printed with
// Chromium's PDF (print media: the links go, the charts stay) the page carries the charts' drawing, which a print
// of the same page without them lacks.
func reportInBrowser(t *testing.T, p *platformtest.Platform, show string) {
	op := browsertest.New(t).Fan("operator", 3*time.Minute)
	set := func(sel, v, event string) {
		op.JS(`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); e.value = ` + strconv.Quote(v) +
			`; e.dispatchEvent(new Event(` + strconv.Quote(event) + `)); })()`)
	}
	op.Go(p.BaseURL + "/admin")
	op.WaitFor("the sign-in form", `!document.getElementById("signin").hidden`)
	set("#token", p.AdminToken, "input")
	set("#opname", "Asha", "input")
	op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
	op.WaitFor("the show in the Reports panel", `document.querySelector('#report-show option[value="`+show+`"]') !== null`)
	set("#report-show", show, "change")
	op.WaitFor("the report's link", `document.getElementById("report-open").getAttribute("href") === "/admin/shows/`+show+`/report"`)
	op.JS(`document.getElementById("report-open").click()`)
	op.WaitFor("the Report view", `location.pathname === "/admin/shows/`+show+`/report" && document.querySelectorAll('svg[role="img"]').length === 4`)

	labels := map[string][]string{
		"chart-flow": {"arrivals 5 in all", "admissions 4 in all", "holds 3 in all", "confirmations 2 in all",
			"refunds 1 in all"},
		"chart-queue":  {"in line 1 at the end"},
		"chart-waits":  {"of 4 admitted fans", "the longest"},
		"chart-funnel": {"5 joined, 4 admitted, 3 held seats, 2 bought"},
	}
	for id, wants := range labels {
		got := op.Text(`document.querySelector("#` + id + ` svg").getAttribute("aria-label")`)
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("%s's label %q does not say %q", id, got, want)
			}
		}
	}
	// Drawn: the five series' lines and the bars have an extent on the page.
	for what, cond := range map[string]string{
		"five lines": `[...document.querySelectorAll("#chart-flow polyline")].filter((l) => l.getBBox().width > 0).length === 5`,
		"wait bars":  `[...document.querySelectorAll("#chart-waits rect")].some((b) => b.getBBox().height > 0)`,
		"four steps": `[...document.querySelectorAll("#chart-funnel rect")].filter((b) => b.getBBox().width > 0).length === 4`,
	} {
		if op.Text(`String(`+cond+`)`) != "true" {
			t.Errorf("the charts lack %s", what)
		}
	}
	if got := op.Text(`document.querySelector('#refusals [data-reason="prefix-blocked"] td').textContent`); got != "1" {
		t.Errorf("refusals table, prefix-blocked: %q", got)
	}
	if got := op.Await(`fetch(document.getElementById("csv").href).then(async (r) => r.status + " " +
		r.headers.get("content-type") + " " + (await r.text()).split("\n")[0])`); got != "200 text/csv; charset=utf-8 figure,key,value" {
		t.Errorf("the CSV link: %q", got)
	}

	// Print media: the links go, the charts stay on the page.
	if _, err := chromedp.Call(op.Ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		t.Fatal(err)
	}
	if op.Text(`String(getComputedStyle(document.querySelector("nav")).display === "none" &&
		[...document.querySelectorAll('svg[role="img"]')].every((s) => s.getBoundingClientRect().height > 50))`) != "true" {
		t.Error("printed, the page does not hide its links or lost a chart")
	}
	withCharts := printPDF(t, op)
	op.JS(`document.querySelectorAll("figure.chart").forEach((f) => f.remove())`)
	without := printPDF(t, op)
	if withCharts.paths < without.paths+4*10 || withCharts.pages < 1 {
		t.Errorf("the printed report has %d pages and %d drawing operations, without its charts %d: the charts are not in it",
			withCharts.pages, withCharts.paths, without.paths)
	}
}

// pdfFacts are what a printed page is checked by: its pages and its drawing operations (moves, lines, curves and
// rectangles in its deflated content streams).
type pdfFacts struct{ pages, paths int }

var (
	pdfStream = regexp.MustCompile(`(?s)stream\r?\n(.*?)\r?\nendstream`)
	pdfPage   = regexp.MustCompile(`/Type\s*/Page\b[^s]`)
	pdfDraw   = regexp.MustCompile(`(?m)(?:^|\s)-?[\d.]+ -?[\d.]+ (?:[ml]|-?[\d.]+ -?[\d.]+ (?:re|-?[\d.]+ -?[\d.]+ c))(?:\s|$)`)
)

func printPDF(t *testing.T, op *browsertest.Fan) pdfFacts {
	t.Helper()
	res, err := chromedp.Call(op.Ctx, page.PrintToPDF, page.PrintToPDFParams{})
	if err != nil {
		t.Fatalf("print to PDF: %v", err)
	}
	if !bytes.HasPrefix(res.Data, []byte("%PDF-")) {
		t.Fatalf("not a PDF: %q", res.Data[:min(16, len(res.Data))])
	}
	f := pdfFacts{pages: len(pdfPage.FindAll(res.Data, -1))}
	for _, m := range pdfStream.FindAllSubmatch(res.Data, -1) {
		zr, err := zlib.NewReader(bytes.NewReader(m[1]))
		if err != nil {
			continue // not deflated (a font program, an image): no drawing of ours
		}
		b, _ := io.ReadAll(zr) // a stream cut at a CR before endstream inflates short: what came out is counted
		f.paths += len(pdfDraw.FindAll(b, -1))
	}
	return f
}
