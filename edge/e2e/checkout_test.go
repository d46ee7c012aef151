package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// The cards the test types. None may ever reach booking: the page sends them to the gateway's tokenization only.
const (
	cardDecline = "4000000000000002"
	cardOK      = "4242424242424242"
	card3DS     = "4000000000003220"
	cardSlow    = "4000000000000259"
)

// TestCheckoutInBrowser pays in a real browser through the real edge, booking and payment simulator, nothing
// stubbed, with the show's waiting room on: a fan admitted by the queue holds seats on the seat map, is declined at the checkout and told so, pays with another card
// and lands on Confirmed with the tickets' QR codes, whose decoded codes check in once; a second booking paid with
// the 3-D Secure card goes through the simulator's challenge page and ends Confirmed too, a third with the slow
// card shows its payment pending until it is confirmed, a failed challenge leaves a booking to pay again, a hold lost
// under the fan (Redis forgot its locks) is a 410 the page explains, leading back to the seats; My bookings cancels a hold and refunds a paid booking (not one
// whose tickets were used). No
// card number reaches booking, no page logs an error, no URL carries a token.
func TestCheckoutInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: "Hayavadana " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true, admitRate: 5})
	// The budget covers six bookings with a slow card and two bank challenges, beside the package's other browser
	// tests on two cores: 18 s alone, over 3 min in a full `make test` once.
	fan := browsertest.New(t).Fan("fan", 8*time.Minute)
	leaks := watchCards(fan, p.BaseURL, cardDecline, cardOK, card3DS, cardSlow)

	// First booking: seats B3 and B4 on the seat map, on to the checkout.
	id := holdOnSeatMap(t, fan, p.BaseURL, show, "B3", "B4")
	fan.WaitFor("the order summary", `document.getElementById("total") !== null && !document.getElementById("pay-section").hidden`)
	summary := fan.Text(`document.getElementById("summary").textContent`)
	for _, want := range []string{"Hayavadana", "Ranga Shankara", "B3", "B4", "GOLD", "450.00 INR", "900.00 INR"} {
		if !strings.Contains(summary, want) {
			t.Errorf("order summary %q lacks %q", summary, want)
		}
	}
	if got := fan.Text(`document.getElementById("countdown").textContent`); !strings.Contains(got, "held for") {
		t.Errorf("countdown %q", got)
	}
	for _, ac := range []string{"cc-name", "cc-number", "cc-exp", "cc-csc"} {
		if fan.Text(`(document.querySelector('input[autocomplete="`+ac+`"]')?.labels?.length || 0) + ""`) != "1" {
			t.Errorf("no labelled input with autocomplete %s", ac)
		}
	}
	if got := fan.Text(`document.getElementById("pay").textContent`); !strings.HasPrefix(got, "Pay") {
		t.Errorf("pay button %q", got)
	}

	typeCard(fan, cardDecline)
	fan.WaitFor("the decline", `document.getElementById("error").textContent.includes("declined")`)
	if fan.Text(`document.getElementById("error").getAttribute("role")`) != "alert" {
		t.Error("the decline is not announced (role=alert)")
	}
	if fan.Path() != "/checkout/"+id {
		t.Fatalf("after a decline the fan is at %s", fan.Path())
	}
	typeCard(fan, cardOK)
	confirmed(t, fan, id, 2)

	// Each QR decodes to the ticket's code, which check-in accepts once.
	for i := range 2 {
		src := fan.Text(`document.querySelectorAll("#tickets img")[` + string(rune('0'+i)) + `].src`)
		code := decodeQR(t, fan, src)
		if st := checkIn(t, p, code); st != http.StatusOK {
			t.Fatalf("check-in of ticket %d: %d", i, st)
		}
		if st := checkIn(t, p, code); st != http.StatusConflict {
			t.Fatalf("second check-in of ticket %d: %d, want 409", i, st)
		}
	}

	// Second booking, 3-D Secure: the checkout sends the fan to the simulator's challenge page, whose button
	// completes authentication and sends the browser back to the booking's page.
	id2 := holdOnSeatMap(t, fan, p.BaseURL, show, "C5")
	fan.WaitFor("the card form", `!document.getElementById("pay-section").hidden`)
	typeCard(fan, card3DS)
	payURL, _ := url.Parse(p.PaymentURL)
	fan.WaitFor("the challenge page", `location.host === "`+payURL.Host+`" && document.querySelector('button[value="complete"]') !== null`)
	fan.JS(`document.querySelector('button[value="complete"]').click()`)
	confirmed(t, fan, id2, 1)

	// Third booking, the slow card: the gateway answers after booking's timeout, so the page shows the payment
	// pending, live, until the webhook and the recovery worker confirm it.
	id3 := holdOnSeatMap(t, fan, p.BaseURL, show, "C6")
	fan.WaitFor("the card form", `!document.getElementById("pay-section").hidden`)
	typeCard(fan, cardSlow)
	fan.WaitFor("payment pending", `location.pathname === "/bookings/`+id3+`" || document.getElementById("status").textContent.startsWith("Payment pending")`)
	confirmed(t, fan, id3, 1)

	// A failed 3-D Secure challenge: the booking's page says the bank did not confirm and offers to pay again,
	// which the fan does with another card.
	id5 := holdOnSeatMap(t, fan, p.BaseURL, show, "C8")
	fan.WaitFor("the card form", `!document.getElementById("pay-section").hidden`)
	typeCard(fan, card3DS)
	fan.WaitFor("the challenge page", `location.host === "`+payURL.Host+`" && document.querySelector('button[value="fail"]') !== null`)
	// The fan leaves the bank's page and comes back to the checkout later: it shows the payment pending and leads
	// back to the same challenge.
	fan.Go(p.BaseURL + "/checkout/" + id5)
	fan.WaitFor("the way back to the challenge", `!document.getElementById("resume").hidden && document.getElementById("status").textContent.startsWith("Payment pending")`)
	fan.JS(`document.getElementById("resume-link").click()`)
	fan.WaitFor("the challenge page again", `location.host === "`+payURL.Host+`" && document.querySelector('button[value="fail"]') !== null`)
	fan.JS(`document.querySelector('button[value="fail"]').click()`)
	fan.WaitFor("not paid", `location.pathname === "/bookings/`+id5+`" && document.getElementById("title").textContent === "Not paid yet"`)
	if got := fan.Text(`document.getElementById("error").textContent`); !strings.Contains(got, "authentication failed") {
		t.Errorf("after a failed challenge the page says %q", got)
	}
	fan.JS(`[...document.querySelectorAll("a")].find((a) => a.textContent === "Pay again").click()`)
	fan.WaitFor("the checkout again", `location.pathname === "/checkout/`+id5+`" && !document.getElementById("pay-section").hidden`)
	typeCard(fan, cardOK)
	confirmed(t, fan, id5, 1)

	// A fourth hold, left unpaid. My bookings lists all four, newest first; the hold is cancelled and the first
	// booking refunded from there, each saying what happened.
	id4 := holdOnSeatMap(t, fan, p.BaseURL, show, "C7")
	fan.Go(p.BaseURL + "/bookings")
	fan.WaitFor("my bookings", `document.querySelectorAll("li.booking").length === 5`)
	list := func() string {
		return fan.Text(`[...document.querySelectorAll("li.booking")].map((li) => li.id + ":" + li.dataset.status).join(" ")`)
	}
	if got, want := list(), "b-"+id4+":HELD b-"+id5+":CONFIRMED b-"+id3+":CONFIRMED b-"+id2+":CONFIRMED b-"+id+":CONFIRMED"; got != want {
		t.Errorf("my bookings: %q, want %q", got, want)
	}
	button := func(id, text string) string {
		return `[...document.querySelectorAll("#b-` + id + ` button")].find((b) => b.textContent === "` + text + `")`
	}
	fan.JS(button(id4, "Cancel hold") + `.click()`)
	fan.WaitFor("the hold cancelled", `document.querySelector("#b-`+id4+`")?.dataset.status === "CANCELLED" && document.querySelector("#b-`+id4+` .result").textContent.includes("Hold cancelled")`)
	// A refund is quoted first ("Refund…" shows the amount) and made by "Confirm refund of ...".
	confirm := func(id string) string {
		return `[...document.querySelectorAll("#b-` + id + ` button")].find((b) => b.textContent.startsWith("Confirm refund of "))`
	}
	// The first booking's tickets were used at the door: its refund is refused, at the quote or at the confirmation,
	// and the page says why.
	refused := `document.getElementById("error").textContent.includes("` + id + `")`
	fan.JS(button(id, "Refund…") + `.click()`)
	fan.WaitFor("the refund's quote or its refusal", refused+` || !!`+confirm(id))
	if fan.Text(`String(!!`+confirm(id)+`)`) == "true" {
		fan.JS(confirm(id) + `.click()`)
	}
	fan.WaitFor("the refused refund", refused)
	fan.JS(button(id2, "Refund…") + `.click()`)
	fan.WaitFor("the refund's quote", `!!`+confirm(id2))
	fan.JS(confirm(id2) + `.click()`)
	fan.WaitFor("the refund", `document.querySelector("#b-`+id2+`")?.dataset.status === "REFUNDED" && document.querySelector("#b-`+id2+` .result").textContent.startsWith("Refunded")`)

	// A hold whose seat locks Redis lost (a failover) while the fan was on the checkout: pay answers 410, and the
	// page says the hold was lost and leads back to the seats.
	id6 := holdOnSeatMap(t, fan, p.BaseURL, show, "A1")
	fan.WaitFor("the card form", `!document.getElementById("pay-section").hidden`)
	opt, err := goredis.ParseURL(p.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Del(context.Background(), rediskey.Seat(show, "A1")).Err(); err != nil {
		t.Fatal(err)
	}
	typeCard(fan, cardOK)
	fan.WaitFor("the lost hold", `document.getElementById("error").textContent.includes("was lost") && !document.getElementById("back").hidden`)
	if href := fan.Text(`document.getElementById("back-link").getAttribute("href")`); href != "/shows/"+show {
		t.Errorf("after a lost hold the page links to %q", href)
	}
	if hidden := fan.Text(`String(document.getElementById("pay-section").hidden)`); fan.Path() != "/checkout/"+id6 || hidden != "true" {
		t.Errorf("after a lost hold: at %s, card form hidden %s", fan.Path(), hidden)
	}

	methods, err := pgxQuery(t, p, `SELECT payment_method FROM payment_attempts`)
	if err != nil {
		t.Fatal(err)
	}
	if len(methods) != 7 {
		t.Errorf("payment attempts %v, want 7 (decline, ok, 3-D Secure, slow, failed 3-D Secure, ok, lost hold)", methods)
	}
	for _, m := range methods {
		if !strings.HasPrefix(m, "pm_") {
			t.Errorf("booking was sent payment method %q, not a gateway's pm_ id", m)
		}
	}
	queued := 0
	for _, u := range fan.URLs() {
		if strings.Contains(u, "/queue/"+show) {
			queued++
		}
	}
	if queued == 0 {
		t.Error("the fan never went through the show's waiting room")
	}
	if l := leaks(); len(l) > 0 {
		t.Errorf("card numbers reached booking: %v", l)
	}
}

// holdOnSeatMap selects seats on the show page and holds them, landing on the checkout; it returns the booking.
// Coming back from the waiting room, the seat map may load twice (a second navigation after the one the test
// waited for drops the selection), so a selection that leads nowhere within seconds is made again.
func holdOnSeatMap(t *testing.T, fan *browsertest.Fan, base, show string, seats ...string) string {
	t.Helper()
	fan.Go(base + "/shows/" + show)
	for try := 1; ; try++ {
		fan.WaitFor("the seat map", seat(seats[0])+` !== null && document.getElementById("live").textContent.startsWith("Live")`)
		for _, s := range seats {
			fan.JS(seat(s) + `.click()`)
		}
		fan.WaitFor("selected", seat(seats[len(seats)-1])+`.getAttribute("aria-pressed") === "true"`)
		fan.JS(`document.getElementById("hold").click()`)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if p := fan.Path(); strings.HasPrefix(p, "/checkout/") {
				return strings.TrimPrefix(p, "/checkout/")
			}
		}
		if try == 3 {
			t.Fatalf("holding %v never reached the checkout (at %s: %q)", seats, fan.Path(),
				fan.Text(`document.getElementById("error")?.textContent || ""`))
		}
		t.Logf("holding %v: no checkout after 10s (at %s), selecting again", seats, fan.Path())
	}
}

// typeCard fills the card form as a person would and presses Pay.
func typeCard(fan *browsertest.Fan, number string) {
	fan.WaitFor("the pay button", `!document.getElementById("pay").disabled`)
	for _, f := range []struct{ sel, text string }{{"#cc-name", "Asha Rao"}, {"#cc-number", number},
		{"#cc-exp", "12/34"}, {"#cc-csc", "123"}} {
		fan.JS(`document.querySelector("` + f.sel + `").value = ""`)
		if err := chromedp.Do(fan.Ctx, chromedp.SendKeys(f.sel, f.text)); err != nil {
			panic(err)
		}
	}
	fan.JS(`document.getElementById("pay").click()`)
}

// confirmed waits for the booking's page to say Confirmed with n QR images loaded, each named for its ticket.
func confirmed(t *testing.T, fan *browsertest.Fan, id string, n int) {
	t.Helper()
	fan.WaitFor("Confirmed", `location.pathname === "/bookings/`+id+`" && document.getElementById("title").textContent === "Confirmed"`)
	fan.WaitFor("the QR codes", `[...document.querySelectorAll("#tickets img")].filter((i) => i.complete && i.naturalWidth > 0).length === `+string(rune('0'+n)))
	alts := fan.Text(`[...document.querySelectorAll("#tickets img")].map((i) => i.alt).join("|")`)
	for _, a := range strings.Split(alts, "|") {
		if !strings.Contains(a, "Ticket tk_") || !strings.Contains(a, "seat ") {
			t.Errorf("QR alt text %q does not name the ticket", a)
		}
	}
	if got := fan.Text(`document.getElementById("tickets").textContent`); !strings.Contains(got, "Ranga Shankara") {
		t.Errorf("tickets lack the venue: %q", got)
	}
}

// twoFans is a browser test's start: the real platform with a show (its title starts with title) whose queue is
// on, and two fans in browsers of their own, of whom A bought seats B3 and B4 on the seat map and sees them
// confirmed on the booking page. It returns the platform, the show, A's booking and the fans.
func twoFans(t *testing.T, title string) (p *platformtest.Platform, show, booking string, a, b *browsertest.Fan) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	show = newShow(t, c, showSpec{title: title + " " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true, admitRate: 5})
	br := browsertest.New(t)
	a, b = br.Fan("fan A", 5*time.Minute), br.Fan("fan B", 5*time.Minute)
	booking = holdOnSeatMap(t, a, p.BaseURL, show, "B3", "B4")
	typeCard(a, cardOK)
	confirmed(t, a, booking, 2)
	return p, show, booking, a, b
}

// ticketItem is a page expression for the booking page's ticket of seat ("Seat B3 · GOLD").
func ticketItem(seat string) string {
	return `[...document.querySelectorAll("#tickets li.ticket")].find((li) => li.querySelector("h2").textContent.startsWith("Seat ` + seat + `"))`
}

// decodeQR fetches a QR image as the page does (the session cookie authorizes it) and decodes it.
func decodeQR(t *testing.T, fan *browsertest.Fan, src string) string {
	t.Helper()
	b64 := fan.Await(`fetch(` + jsString(src) + `).then((r) => r.arrayBuffer()).then((b) => { let s = ""; for (const x of new Uint8Array(b)) s += String.fromCharCode(x); return btoa(s); })`)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("QR image: %v", err)
	}
	return readQR(t, img)
}

// readQR decodes the QR code a ticket image is.
func readQR(t *testing.T, img image.Image) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	// The image is the barcode alone, as booking draws it (ZXing's "pure barcode"): read it as such, not by
	// hunting for it as in a camera's picture, where ZXing's detector misreads a dense code now and then.
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("decode QR: %v", err)
	}
	return res.GetText()
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func checkIn(t *testing.T, p *platformtest.Platform, code string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", p.BaseURL+"/api/v1/checkin", strings.NewReader(`{"code":`+jsString(code)+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// watchCards records every request the fan's browser sends to the platform whose URL or body holds one of the
// card numbers; it returns a function reporting them.
func watchCards(fan *browsertest.Fan, base string, cards ...string) func() []string {
	var mu sync.Mutex
	var leaks []string
	requests := chromedp.Events(fan.Ctx, network.RequestWillBeSent)
	go func() {
		for e, err := range requests {
			if err != nil {
				return
			}
			if !strings.HasPrefix(e.Request.URL, base) {
				continue
			}
			var body strings.Builder
			for _, d := range e.Request.PostDataEntries {
				body.Write(d.Bytes)
			}
			for _, c := range cards {
				if strings.Contains(e.Request.URL, c) || strings.Contains(strings.ReplaceAll(body.String(), " ", ""), c) {
					mu.Lock()
					leaks = append(leaks, e.Request.Method+" "+e.Request.URL)
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), leaks...)
	}
}

// pgxQuery reads one text column from booking's database.
func pgxQuery(t *testing.T, p *platformtest.Platform, sql string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
