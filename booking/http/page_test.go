package http_test

import (
	"context"
	"io"
	nethttp "net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/loadtest/browsertest"
)

// TestPagesServe: the home page lists the upcoming shows with links to them and filters them with a GET form,
// the show page gives the facts, an unknown show is an HTML 404 for a browser and a problem for an API client,
// and assets are versioned, cached for good, compressed and revalidated.
func TestPagesServe(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show
	ctx := context.Background()
	ev, err := h.env.Svc.CreateEvent(ctx, booking.Event{Title: "Jazz Night", Kind: "concert", Genre: "Jazz",
		Language: "Hindi", DurationMinutes: 90})
	if err != nil {
		t.Fatal(err)
	}
	jazz, err := h.env.Svc.CreateShow(ctx, booking.Show{EventID: ev.ID, HallID: show.HallID,
		StartsAt: time.Now().Add(72 * time.Hour), SaleStartsAt: time.Now().Add(-time.Hour), Currency: "INR",
		Prices: map[string]int64{"SILVER": 10000, "GOLD": 20000, "PLATINUM": 30000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bookingtest.DeleteShowKeys(h.env.RDB, jazz.ID) })
	link := func(id string) string { return `<a class="show" href="/shows/` + id + `">` }

	home := h.do("GET", "/", "", "", "Accept", "text/html")
	body := string(home.body)
	if home.status != 200 || !strings.HasPrefix(home.header.Get("Content-Type"), "text/html") {
		t.Fatalf("home: %d %s", home.status, home.header.Get("Content-Type"))
	}
	for _, want := range []string{link(show.ID), link(jazz.ID), "Premiere", "Jazz Night", `href="/bookings"`,
		`<label for="f-genre">`, `<option>Jazz</option>`, `<option>Hindi</option>`, `<option>Bangalore</option>`} {
		if !strings.Contains(body, want) {
			t.Errorf("home lacks %q", want)
		}
	}
	if csp := home.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("home CSP %q", csp)
	}
	for _, tc := range []struct{ query, in, out string }{
		{"genre=jazz", jazz.ID, show.ID},
		{"language=English", show.ID, jazz.ID},
		{"genre=Drama&language=English&city=bangalore", show.ID, jazz.ID},
		{"date=" + jazz.StartsAt.UTC().Format(time.DateOnly), jazz.ID, show.ID},
	} {
		b := string(h.do("GET", "/?"+tc.query, "", "").body)
		if !strings.Contains(b, link(tc.in)) || strings.Contains(b, link(tc.out)) {
			t.Errorf("home?%s: want %s listed and %s not", tc.query, tc.in, tc.out)
		}
		if !strings.Contains(b, "Clear filters") {
			t.Errorf("home?%s offers no way to clear the filters", tc.query)
		}
	}
	if b := string(h.do("GET", "/?genre=jazz&city=BANGALORE", "", "").body); !strings.Contains(b, "<option selected>Jazz</option>") ||
		!strings.Contains(b, "<option selected>Bangalore</option>") {
		t.Errorf("filters in another case are not shown selected")
	}
	if r := h.do("GET", "/?genre=Nothing", "", ""); !strings.Contains(string(r.body), "No upcoming shows match") {
		t.Errorf("an empty result says nothing: %s", r.body)
	}
	if r := h.do("GET", "/?date=tomorrow", "", "", "Accept", "text/html"); r.status != 400 ||
		!strings.Contains(string(r.body), `role="alert"`) {
		t.Errorf("bad date: %d %s", r.status, r.body)
	}

	page := h.do("GET", "/shows/"+show.ID, "", "", "Accept", "text/html")
	pb := string(page.body)
	for _, want := range []string{"Premiere", "PVR Forum", "Bangalore", "450.00 INR", "800.00 INR",
		"200 of 200 seats available", "Select up to 10 seats", `data-show="` + show.ID + `"`} {
		if !strings.Contains(pb, want) {
			t.Errorf("show page lacks %q", want)
		}
	}
	nf := h.do("GET", "/shows/nosuchshow", "", "", "Accept", "text/html,application/xhtml+xml")
	if nf.status != 404 || !strings.HasPrefix(nf.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(nf.body), `role="alert"`) {
		t.Errorf("unknown show for a browser: %d %s", nf.status, nf.header.Get("Content-Type"))
	}
	problemOf(t, h.do("GET", "/shows/nosuchshow", "", "", "Accept", "application/json"))

	// Assets: the page names them by version; that version is immutable, another one revalidates.
	src := regexp.MustCompile(`src="(/assets/([0-9a-f]+)/seatmap\.js)"`).FindStringSubmatch(pb)
	if src == nil {
		t.Fatalf("show page loads no versioned seatmap.js")
	}
	js := h.do("GET", src[1], "", "", "Accept-Encoding", "identity")
	if js.status != 200 || !strings.HasPrefix(js.header.Get("Content-Type"), "text/javascript") ||
		!strings.Contains(js.header.Get("Cache-Control"), "immutable") || !strings.Contains(string(js.body), "export") &&
		!strings.Contains(string(js.body), "import") {
		t.Fatalf("asset: %d %v", js.status, js.header)
	}
	if r := h.do("GET", "/assets/0000/seatmap.js", "", ""); r.status != 200 || r.header.Get("Cache-Control") != "public, no-cache" {
		t.Errorf("an old version's asset: %d %q", r.status, r.header.Get("Cache-Control"))
	}
	if r := h.do("GET", src[1], "", "", "If-None-Match", js.header.Get("ETag")); r.status != 304 {
		t.Errorf("revalidation: %d", r.status)
	}
	req, _ := nethttp.NewRequest("GET", h.base+src[1], nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := nethttp.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || len(gz) >= len(js.body) {
		t.Errorf("gzip: %q, %d bytes for %d", resp.Header.Get("Content-Encoding"), len(gz), len(js.body))
	}
	if r := h.do("GET", "/assets/"+src[2]+"/nothing.js", "", ""); r.status != 404 {
		t.Errorf("unknown asset: %d", r.status)
	}
}

// TestSeatMapPageInBrowser drives the show page in headless Chromium on a phone-sized screen: every seat is a
// button named for screen readers, a rival's hold greys a seat out live, the selection cap holds, the keyboard
// moves between seats, and a conflict offers alternatives that one click holds, landing on the checkout.
func TestSeatMapPageInBrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser")
	}
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	fan := browsertest.New(t).Fan("fan", 60*time.Second)
	seat := func(id string) string { return `document.querySelector('#map button[data-seat="` + id + `"]')` }
	label := func(id string) string { return fan.Text(seat(id) + `.getAttribute("aria-label")`) }

	fan.Go(h.base + "/shows/" + show)
	fan.WaitFor("seat map", seat("J20")+` !== null && document.getElementById("live").textContent.startsWith("Live")`)
	if got := label("D5"); got != "Seat D5, GOLD, 450.00 INR, available" {
		t.Errorf("D5 label %q", got)
	}
	if n := fan.Text(`String(document.querySelectorAll("#map button[aria-label][aria-pressed]").length)`); n != "200" {
		t.Errorf("%s seat buttons", n)
	}
	// A rival holds E5 and E6: the page learns it from the stream.
	if r := h.do("POST", "/api/v1/bookings/hold", h.user("rival"), holdBody(show, "E5", "E6")); r.status != 201 {
		t.Fatalf("rival hold: %d %s", r.status, r.body)
	}
	fan.WaitFor("stream update", seat("E6")+`.getAttribute("aria-label").endsWith(", held")`)

	// The keyboard: one tab stop in the map, arrows move along and across rows, Space selects.
	fan.JS(seat("A1") + `.focus()`)
	for _, k := range []string{"ArrowRight", "ArrowRight", "ArrowDown"} {
		fan.JS(`document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {key: "` + k + `", bubbles: true}))`)
	}
	if got := fan.Text(`document.activeElement.dataset.seat`); got != "B3" {
		t.Errorf("arrows moved focus to %q, want B3", got)
	}
	fan.JS(`document.activeElement.click()`)
	if got := label("B3"); !strings.HasSuffix(got, ", selected") || fan.Text(seat("B3")+`.getAttribute("aria-pressed")`) != "true" {
		t.Errorf("B3 after selecting: %q", got)
	}
	fan.JS(seat("B3") + `.click()`)

	// The cap: ten seats, the eleventh refused with a message.
	for i := 1; i <= 11; i++ {
		fan.JS(seat("H"+strconv.Itoa(i)) + `.click()`)
	}
	if got := fan.Text(`document.getElementById("error").textContent`); !strings.Contains(got, "at most 10") {
		t.Errorf("eleventh seat: alert %q", got)
	}
	fan.JS(`document.getElementById("clear").click()`)

	// The fan picks G1 and G2 while the live view lags (as on a slow network), and a rival takes G2 meanwhile:
	// the hold is refused, the page names G2 and offers alternatives, which one click holds.
	fan.CutStreams()
	fan.JS(seat("G1") + `.click(); ` + seat("G2") + `.click()`)
	if r := h.do("POST", "/api/v1/bookings/hold", h.user("rival2"), holdBody(show, "G2")); r.status != 201 {
		t.Fatalf("rival hold: %d %s", r.status, r.body)
	}
	fan.JS(`document.getElementById("hold").click()`)
	fan.WaitFor("conflict", `!document.getElementById("conflict").hidden`)
	alert := fan.Text(`document.getElementById("error").textContent`)
	if !strings.Contains(alert, "G2 was just taken") || !strings.Contains(alert, "Suggested instead") {
		t.Fatalf("conflict alert %q", alert)
	}
	if n := fan.Text(`String(document.querySelectorAll("#map button.alt").length)`); n != "2" {
		t.Errorf("%s seats highlighted as alternatives, want 2", n)
	}
	// The checkout page is not booking/http's seat map: whether it is served is the whole journey's test.
	fan.AllowMissing("/checkout/")
	fan.JS(`document.getElementById("take-alt").click()`)
	fan.WaitFor("checkout", `location.pathname.startsWith("/checkout/")`)
}
