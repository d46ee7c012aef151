package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
)

// The fan's journey in a real browser, through the real edge and booking (loadtest/platformtest: the payment
// simulator, booking and the edge with its waiting room, each its app's own Run), with the show's queue on and
// no route stubbed. Every tab is phone-sized and fails the test on a console error or a token in any URL.

// journeyPlatform starts the platform and an admin client for it.
func journeyPlatform(t *testing.T) (*platformtest.Platform, *fsclient.Client) {
	t.Helper()
	return journeyPlatformOn(t, nil)
}

// journeyPlatformOn is journeyPlatform on a Redis Cluster's nodes (none: the single Redis).
func journeyPlatformOn(t *testing.T, cluster []string) (*platformtest.Platform, *fsclient.Client) {
	t.Helper()
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8, RedisClusterAddrs: cluster,
		Edge: map[string]string{"QUEUE_TICK": "100ms"}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// slowQueue starts the platform with a show on sale whose queue barely moves (a fan a hundred seconds) and one fan
// already waiting in it, so that the next fan waits behind them. The show's title is title and a random suffix.
func slowQueue(t *testing.T, title string) (*platformtest.Platform, *fsclient.Client, string) {
	t.Helper()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: title + " " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true,
		admitRate: 0.01})
	ahead := guestFan(t, c)
	if q, res, err := c.Join(context.Background(), ahead.Token, show, ""); err != nil || q.Status != "waiting" {
		t.Fatalf("the fan ahead: %+v %d %v", q, res.Status, err)
	}
	return p, c, show
}

// textOf is a page expression for the text of the first element matching the CSS selector sel ("" if none).
func textOf(sel string) string {
	return `(document.querySelector(` + strconv.Quote(sel) + `)?.textContent ?? "")`
}

type showSpec struct {
	title     string
	saleIn    time.Duration // the sale opens this long from now (negative: already open)
	queue     bool
	admitRate float64
	rows      []fsclient.Row
}

// newShow creates a venue, an event and a show with its queue set as spec says, and returns the show's id.
func newShow(t testing.TB, c *fsclient.Client, spec showSpec) string {
	t.Helper()
	ctx := context.Background()
	if spec.rows == nil {
		spec.rows = []fsclient.Row{{Row: "A", Seats: 8, Category: "PLATINUM"}, {Row: "B", Seats: 8, Category: "GOLD"},
			{Row: "C", Seats: 8, Category: "GOLD"}}
	}
	v, err := c.CreateVenue(ctx, fsclient.Venue{Name: "Ranga Shankara", City: "Bangalore",
		Halls: []fsclient.Hall{{Name: "Main hall", Rows: spec.rows}}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.CreateEvent(ctx, fsclient.Event{Title: spec.title, Kind: "play", Genre: "Drama", Language: "Kannada",
		DurationMinutes: 120})
	if err != nil {
		t.Fatal(err)
	}
	prices := map[string]int64{}
	for _, r := range spec.rows {
		prices[r.Category] = map[string]int64{"PLATINUM": 90000, "GOLD": 45000}[r.Category]
	}
	show, err := c.CreateShow(ctx, fsclient.Show{EventID: ev, HallID: v.Halls[0].HallID,
		StartsAt: time.Now().Add(72 * time.Hour), SaleStartsAt: time.Now().Add(spec.saleIn), Currency: "INR",
		Prices: prices})
	if err != nil {
		t.Fatal(err)
	}
	if spec.queue {
		rate := spec.admitRate
		if rate == 0 {
			rate = 2
		}
		if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: rate, MaxActive: 50,
			TokenTTLSeconds: 600}); err != nil {
			t.Fatal(err)
		}
	}
	return show
}

func seat(id string) string { return `document.querySelector('#map button[data-seat="` + id + `"]')` }

// TestFanJourneyInBrowser: two fans find the show from the home page, are sent through the queue (each page
// solving the proof of work its place costs) and admitted in queue order, and both try the same seat. The winner
// lands on the checkout; the loser is told which seat was taken, sees the alternatives highlighted and takes them
// with one click, landing on a checkout too. The platform runs on the package's Redis Cluster: the other browser
// tests cover the single Redis.
func TestFanJourneyInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatformOn(t, redistest.Prefer(t, redistest.Cluster).Addrs)
	title := "Tughlaq " + uuid.NewString()[:6]
	show := newShow(t, c, showSpec{title: title, saleIn: -time.Minute, queue: true, admitRate: 1})
	// Admission is paused while the fans arrive, so each is sure to be seen waiting in the queue (an admission
	// between two looks would skip it) and B to queue behind A; it resumes once both wait.
	pauseQueue(t, p, show, true)
	br := browsertest.New(t)
	a, b := br.Fan("fan A", 6*time.Minute), br.Fan("fan B", 6*time.Minute)

	// Fan A: home, the show's link, the queue (the edge sends a browser without admission there), the seats.
	a.Go(p.BaseURL + "/")
	link := `document.querySelector('a[href="/shows/` + show + `"]')`
	a.WaitFor("the show on the home page", link+` !== null`)
	if got := a.Text(link + `.closest("li.event").querySelector("h2").textContent`); got != title {
		t.Errorf("the show's link is under %q, want %q", got, title)
	}
	a.JS(link + `.click()`)
	a.WaitFor("the waiting room", `location.pathname === "/queue/`+show+`"`)
	a.WaitFor("the show's name first", `document.getElementById("title").textContent === "`+title+`"`)

	// Fan B has been browsing a show without a queue (so the browser has its fs_session cookie), then follows a
	// shared link to this one a moment later: the session is no admission, and the edge sends B to the queue too,
	// behind A.
	open := newShow(t, c, showSpec{title: "Matinee", saleIn: -time.Minute})
	b.Go(p.BaseURL + "/shows/" + open)
	b.WaitFor("the seat map live", `document.getElementById("live").textContent.startsWith("Live")`)
	// The page signs a guest in beside the seat stream (no queue here, so the stream needs no session): wait
	// for the session itself.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := b.Await(`fetch("/api/v1/me").then((r) => String(r.status))`)
		if got == "200" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B has no session on the open show's page: %s", got)
		}
	}
	b.Go(p.BaseURL + "/shows/" + show)
	b.WaitFor("the waiting room", `location.pathname === "/queue/`+show+`"`)
	for _, f := range []*browsertest.Fan{a, b} {
		f.WaitFor("the place kept while paused", `!document.getElementById("paused").hidden`)
	}
	pauseQueue(t, p, show, false)

	var aAt, bAt time.Time
	deadline := time.Now().Add(time.Minute)
	for aAt.IsZero() || bAt.IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for admission")
		}
		if aAt.IsZero() && a.Path() == "/shows/"+show {
			aAt = time.Now()
		}
		if bAt.IsZero() && b.Path() == "/shows/"+show {
			bAt = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bAt.Before(aAt) {
		t.Errorf("fan B reached the seats %v before fan A, who queued first", aAt.Sub(bAt))
	}
	// Each page earned its place: the show's bot protection (on with its queue) asked each for a proof of work,
	// which the page solved while its fan read it.
	var bots botFigures
	admin(t, p, "GET", "/admin/v1/shows/"+show+"/bots", "", &bots)
	if bots.Solved != 2 || len(bots.Refused) != 0 {
		t.Errorf("bot figures %+v, want each fan's place bought with one proof and nothing refused", bots)
	}
	for _, f := range []*browsertest.Fan{a, b} {
		f.WaitFor("the seat map", seat("C8")+` !== null && document.getElementById("live").textContent.startsWith("Live")`)
	}
	if got := a.Text(seat("B5") + `.getAttribute("aria-label")`); got != "Seat B5, GOLD, 450.00 INR, available" {
		t.Errorf("B5 is %q", got)
	}

	// Both pick B5 and B6 at the same moment: B's live view lags (its stream cut), so B sees them free when A
	// already has them.
	b.CutStreams()
	for _, f := range []*browsertest.Fan{a, b} {
		f.JS(seat("B5") + `.click(); ` + seat("B6") + `.click()`)
		f.WaitFor("selected", seat("B6")+`.getAttribute("aria-pressed") === "true"`)
	}
	a.JS(`document.getElementById("hold").click()`)
	a.WaitFor("A's checkout", `location.pathname.startsWith("/checkout/")`)
	b.WaitFor("hold button", `document.getElementById("hold").textContent.startsWith("Hold 2 seats")`)
	b.JS(`document.getElementById("hold").click()`)
	b.WaitFor("B's conflict", `!document.getElementById("conflict").hidden`)
	alert := b.Text(`document.getElementById("error").textContent`)
	if !strings.Contains(alert, "B5, B6 were just taken") || !strings.Contains(alert, "Suggested instead") {
		t.Fatalf("B's alert: %q", alert)
	}
	alts := b.Text(`[...document.querySelectorAll("#map button.alt")].map((e) => e.dataset.seat).join(",")`)
	if strings.Count(alts, ",") != 1 || strings.Contains(alts, "B5") {
		t.Fatalf("alternatives highlighted: %q", alts)
	}
	b.JS(`document.getElementById("take-alt").click()`)
	b.WaitFor("B's checkout", `location.pathname.startsWith("/checkout/")`)
	aBooking := strings.TrimPrefix(a.Path(), "/checkout/")
	bBooking := strings.TrimPrefix(b.Path(), "/checkout/")
	if aBooking == "" || aBooking == bBooking {
		t.Fatalf("bookings %q and %q", aBooking, bBooking)
	}
	// One identity per browser: each booking belongs to the session cookie that queued and held, and to no one
	// else.
	booking := func(f *browsertest.Fan, id string) string {
		return f.Await(`fetch("/api/v1/bookings/` + id + `").then((r) => r.ok ? r.json().then((j) => j.status + " " + j.seatIds.join(",")) : String(r.status))`)
	}
	if got := booking(a, aBooking); got != "HELD B5,B6" {
		t.Errorf("A's booking: %q", got)
	}
	if got := booking(b, bBooking); got != "HELD "+alts {
		t.Errorf("B's booking: %q, want HELD %s", got, alts)
	}
	if got := booking(b, aBooking); got != "404" {
		t.Errorf("A's booking seen by B: %q", got)
	}

	// Checkout: A pays with the card that approves; B's first card is declined, B is told and pays with another
	// within the hold. Both end on their tickets, and each ticket's QR code, decoded as a scanner would, is
	// accepted at the door once.
	typeCard(a, cardOK)
	typeCard(b, cardDecline)
	b.WaitFor("the decline", `document.getElementById("error").textContent.trim() !== ""`)
	if got := b.Text(`document.getElementById("error").textContent`); !strings.Contains(strings.ToLower(got), "declined") {
		t.Errorf("B's decline: %q", got)
	}
	if !strings.HasPrefix(b.Path(), "/checkout/") {
		t.Fatalf("after a decline B is on %s", b.Path())
	}
	typeCard(b, cardOK)
	for _, fb := range []struct {
		f  *browsertest.Fan
		id string
	}{{a, aBooking}, {b, bBooking}} {
		confirmed(t, fb.f, fb.id, 2)
		srcs := fb.f.Text(`[...document.querySelectorAll("#tickets img")].map((i) => i.getAttribute("src")).join(" ")`)
		for _, src := range strings.Fields(srcs) {
			code := decodeQR(t, fb.f, src)
			if first, again := checkIn(t, p, code), checkIn(t, p, code); first != 200 || again != 409 {
				t.Errorf("%s: check-in of %s: %d then %d, want 200 then 409", fb.f.Name, src, first, again)
			}
		}
	}
}
