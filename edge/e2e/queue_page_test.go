package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// notificationRecorder wraps the browser's Notification so a test can see that the page notified, and what the
// tab's title was then: the page's own navigation follows at once, so it is kept in sessionStorage.
const notificationRecorder = `(() => {
  const N = window.Notification;
  if (!N) return;
  const R = function (title, opts) {
    sessionStorage.setItem("fs_test_note", title + "|" + document.title);
    return new N(title, opts);
  };
  Object.defineProperty(R, "permission", { get: () => N.permission });
  R.requestPermission = (...a) => N.requestPermission(...a);
  window.Notification = R;
})();`

// TestQueuePageInBrowser plays the waiting room's states in a phone-sized browser through the real platform.
// Each state has its own show and tab, so the states play at once (one after another they took 144 s, the
// package's longest test).
func TestQueuePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	br := browsertest.New(t)
	ctx := context.Background()
	views := `["connecting","waiting","paused","opens","admitted","soldout","closed","off"].filter((id) => !document.getElementById(id).hidden).join(",")`

	t.Run("before opening: countdown, the draw, then the seats with a notification", func(t *testing.T) {
		t.Parallel()
		// The tab first, so the time before opening is all the page's: it must show the countdown before then.
		fan := br.FanFor(t, "early fan", 3*time.Minute)
		fan.Grant("notifications")
		fan.OnNewDocument(notificationRecorder)
		title := "Hamlet " + uuid.NewString()[:6]
		// 20 s: at load 25 the show's creation and the page's first answer took more than 8 s, and the sale had
		// opened before the page could count down to it.
		show := newShow(t, c, showSpec{title: title, saleIn: 20 * time.Second, queue: true, admitRate: 5})
		fan.Go(p.BaseURL + "/queue/" + show)
		fan.WaitFor("the countdown", `document.getElementById("countdown").textContent.startsWith("Opens in")`)
		if v := fan.Text(views); v != "opens" {
			t.Errorf("before opening the page shows %q", v)
		}
		if got := fan.Text(`document.getElementById("opens").textContent`); !strings.Contains(got, "drawn at random") {
			t.Errorf("the draw is not explained: %q", got)
		}
		if got := fan.Text(`document.getElementById("title").textContent`); got != title {
			t.Errorf("the page names %q, want %q", got, title)
		}
		fan.WaitFor("the seats after opening", `location.pathname === "/shows/`+show+`"`)
		fan.WaitFor("the seat map", seat("A1")+` !== null`)
		note := fan.Text(`sessionStorage.getItem("fs_test_note") || ""`)
		if !strings.HasPrefix(note, "It's your turn|✔ Your turn!") {
			t.Errorf("notification and title at admission: %q", note)
		}
	})

	// A fan who joined before the draw holds a place receipt that names no ticket (the draw had not given one);
	// once the draw has, the page renews it, so that their place comes back if the waiting room loses its state.
	t.Run("before opening, then a wait: the receipt names the drawn ticket", func(t *testing.T) {
		t.Parallel()
		fan := br.FanFor(t, "early fan who waits", 3*time.Minute)
		show := newShow(t, c, showSpec{title: "Drawn", saleIn: 15 * time.Second, queue: true, admitRate: 0.001})
		for range 2 { // fans in the draw besides ours, so that ours most likely waits
			g, _, err := c.NewGuest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Join(ctx, g.Token, show, ""); err != nil {
				t.Fatal(err)
			}
		}
		fan.Go(p.BaseURL + "/queue/" + show)
		fan.WaitFor("the countdown", `document.getElementById("countdown").textContent.startsWith("Opens in")`)
		if seq := receiptSeq(t, fan.Cookie(admission.PlaceCookieName(show))); seq != 0 {
			t.Fatalf("before the draw the receipt names ticket %d", seq)
		}
		fan.WaitFor("a position after the draw", `(!document.getElementById("waiting").hidden || !document.getElementById("admitted").hidden)`)
		if fan.Text(views) != "waiting" {
			t.Skip("our fan was drawn first and let in: nothing to renew") // the draw is random; rare with three
		}
		deadline := time.Now().Add(30 * time.Second) // the page asks within 20 s of the draw (it spreads the crowd)
		for receiptSeq(t, fan.Cookie(admission.PlaceCookieName(show))) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the receipt still names no ticket %v after the draw; URLs %v", 30*time.Second, fan.URLs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("queue off: straight to the seats", func(t *testing.T) {
		t.Parallel()
		show := newShow(t, c, showSpec{title: "Open sale", saleIn: -time.Minute})
		fan := br.FanFor(t, "fan", 3*time.Minute)
		fan.Go(p.BaseURL + "/queue/" + show)
		fan.WaitFor("the seats", `location.pathname === "/shows/`+show+`"`)
		fan.WaitFor("the seat map", seat("A1")+` !== null`)
	})

	t.Run("sold out: the waitlist", func(t *testing.T) {
		t.Parallel()
		show := newShow(t, c, showSpec{title: "Sold out", saleIn: -time.Minute,
			rows: []fsclient.Row{{Row: "A", Seats: 2, Category: "GOLD"}}})
		g, _, err := c.NewGuest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, res, err := c.Hold(ctx, g.Token, "", show, []string{"A1", "A2"}, uuid.NewString())
		if err != nil || res.Status != 201 {
			t.Fatalf("hold: %v %d", err, res.Status)
		}
		if _, res, err := c.Pay(ctx, g.Token, "", b.BookingID, "pm_card_ok", uuid.NewString()); err != nil || res.Status != 200 {
			t.Fatalf("pay: %v %d", err, res.Status)
		}
		if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: 5, MaxActive: 10,
			TokenTTLSeconds: 600}); err != nil {
			t.Fatal(err)
		}
		// An operator's switch reaches every replica's gate within a second (its cache of the settings).
		waitGate(t, p.BaseURL, show)
		fan := br.FanFor(t, "late fan", 3*time.Minute)
		fan.Go(p.BaseURL + "/shows/" + show)
		fan.WaitFor("sold out", `location.pathname === "/queue/`+show+`" && !document.getElementById("soldout").hidden`)
		fan.JS(`document.getElementById("group").value = "3"; document.getElementById("waitlist-join").click()`)
		fan.WaitFor("on the waitlist", `!document.getElementById("waitlist-status").hidden`)
		if got := fan.Text(`document.getElementById("waitlist-status").textContent`); !strings.HasPrefix(got, "You are number 1 on the waitlist for 3 seats") {
			t.Errorf("waitlist: %q", got)
		}
	})

	// Both fans hesitate past their admission in the same eleven seconds. One queue is paused meanwhile, so its fan
	// waits there with the message; the other is empty, so its fan is let straight back in and told so on the
	// seats. (Watching for the message in a queue that readmits at once raced its next tick.)
	t.Run("admission expired: back to the queue with a message", func(t *testing.T) {
		t.Parallel()
		type hesitant struct {
			show string
			fan  *browsertest.Fan
		}
		var fans []hesitant
		for _, name := range []string{"slow fan, busy queue", "slow fan, empty queue"} {
			show := newShow(t, c, showSpec{title: "Short admission", saleIn: -time.Minute})
			if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: 5, MaxActive: 10,
				TokenTTLSeconds: 10}); err != nil {
				t.Fatal(err)
			}
			fan := br.FanFor(t, name, 3*time.Minute)
			fan.Go(p.BaseURL + "/shows/" + show)
			fan.WaitFor("the seat map", `location.pathname === "/shows/`+show+`" && `+seat("A1")+` !== null`)
			fan.JS(seat("A1") + `.click()`)
			fans = append(fans, hesitant{show, fan})
		}
		time.Sleep(11 * time.Second) // the admissions (and their cookies) expire while the fans hesitate
		busy, empty := fans[0], fans[1]
		pauseQueue(t, p, busy.show, true)
		for _, h := range fans {
			h.fan.JS(`document.getElementById("hold").click()`)
		}
		busy.fan.WaitFor("back in the queue", `location.pathname === "/queue/`+busy.show+`" && !document.getElementById("flash").hidden`)
		if got := busy.fan.Text(`document.getElementById("flash").textContent`); !strings.Contains(got, "back in the waiting room") {
			t.Errorf("message in the queue: %q", got)
		}
		empty.fan.WaitFor("back at the seats, told why", `location.pathname === "/shows/`+empty.show+`" && `+
			`!document.getElementById("notice").hidden && `+seat("A1")+` !== null`)
		if got := empty.fan.Text(`document.getElementById("notice").textContent`); !strings.Contains(got, "let straight back in") {
			t.Errorf("message at the seats: %q", got)
		}
		if got := empty.fan.Text(`String(document.querySelectorAll('#map [aria-pressed="true"]').length)`); got != "0" {
			t.Errorf("%s seats still chosen after the admission ended", got)
		}
	})

	t.Run("paused by the operator: the place kept", func(t *testing.T) {
		t.Parallel()
		show := newShow(t, c, showSpec{title: "Paused", saleIn: -time.Minute, queue: true, admitRate: 0.01})
		for range 2 { // fans ahead, so ours waits
			g, _, err := c.NewGuest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Join(ctx, g.Token, show, ""); err != nil {
				t.Fatal(err)
			}
		}
		fan := br.FanFor(t, "patient fan", 3*time.Minute)
		fan.Go(p.BaseURL + "/queue/" + show)
		fan.WaitFor("waiting", `!document.getElementById("waiting").hidden && document.getElementById("position").textContent !== "…"`)
		pauseQueue(t, p, show, true)
		fan.WaitFor("paused", `!document.getElementById("paused").hidden`)
		if got := fan.Text(`document.getElementById("paused").textContent`); !strings.Contains(got, "You keep your place") {
			t.Errorf("paused: %q", got)
		}
		pauseQueue(t, p, show, false)
		fan.WaitFor("waiting again", `!document.getElementById("waiting").hidden`)
	})

	// A network or proxy between the fan and the edge that refuses the seat stream, or holds its answer back (a
	// buffering proxy): the map polls instead.
	for _, c2 := range []struct {
		name  string
		block func(*browsertest.Fan, string)
	}{{"refused", (*browsertest.Fan).FailRequests}, {"held back", (*browsertest.Fan).HoldRequests}} {
		t.Run("the seat stream "+c2.name+": polling", func(t *testing.T) {
			t.Parallel()
			show := newShow(t, c, showSpec{title: "Blocked", saleIn: -time.Minute, queue: true, admitRate: 2})
			fan := br.FanFor(t, "fan behind a proxy", 3*time.Minute)
			c2.block(fan, "*/seats/stream")
			fan.Go(p.BaseURL + "/queue/" + show)
			fan.WaitFor("the seats", `location.pathname === "/shows/`+show+`"`)
			seesItsHoldPolled(t, fan, show, "Live updates are unavailable here. Seats refresh every")
		})
	}

	t.Run("without EventSource: polling", func(t *testing.T) {
		t.Parallel()
		show := newShow(t, c, showSpec{title: "Polling", saleIn: -time.Minute, queue: true, admitRate: 2})
		fan := br.FanFor(t, "old browser", 3*time.Minute)
		fan.OnNewDocument(`delete window.EventSource;`)
		fan.Go(p.BaseURL + "/queue/" + show)
		fan.WaitFor("the seats", `location.pathname === "/shows/`+show+`"`)
		seesItsHoldPolled(t, fan, show, "Seats refresh every")
		for _, u := range fan.URLs() {
			if strings.HasSuffix(u, "/queue/"+show+"/events") || strings.HasSuffix(u, "/seats/stream") {
				t.Errorf("a page without EventSource opened a stream: %s", u)
			}
		}
	})
}

// TestQueuePageKeepsThePlaceWhenRedisIsDown: while the queue's store is down (its own redis-server, killed), the
// page says it is reconnecting and that the place is kept, and never that the queue is closed; when Redis is back
// the page carries on by itself.
func TestQueuePageKeepsThePlaceWhenRedisIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	r := storetest.StartRedis(t)
	p := platformtest.Start(t, platformtest.Options{MaxConns: 8, Booking: map[string]string{"REDIS_URL": r.URL},
		Edge: map[string]string{"REDIS_URL": r.URL, "QUEUE_TICK": "100ms"}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	show := newShow(t, c, showSpec{title: "Outage", saleIn: -time.Minute, queue: true, admitRate: 0.01})
	ctx := context.Background()
	for range 3 { // fans ahead, so ours waits
		g, _, err := c.NewGuest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Join(ctx, g.Token, show, ""); err != nil {
			t.Fatal(err)
		}
	}
	fan := browsertest.New(t).Fan("fan", 4*time.Minute)
	fan.Go(p.BaseURL + "/queue/" + show)
	fan.WaitFor("waiting", `!document.getElementById("waiting").hidden && document.getElementById("position").textContent !== "…"`)
	r.Kill()
	fan.WaitFor("reconnecting", `document.getElementById("error").textContent === "Reconnecting… your place is kept."`)
	for range 30 { // three seconds down: still reconnecting, never closed
		if v := fan.Text(`document.getElementById("closed").hidden ? "" : "closed"`); v != "" {
			t.Fatal("the page says closed while Redis is down")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.Start()
	fan.WaitFor("carrying on", `document.getElementById("error").hidden || location.pathname.startsWith("/shows/")`)
}

// waitGate waits until the edge's gate sends a browser without admission from the show page to the queue.
// pauseQueue pauses or resumes a show's admissions as an operator does; the admitter reads it at its next tick.
func pauseQueue(t *testing.T, p *platformtest.Platform, show string, on bool) {
	t.Helper()
	body := `{"paused":false}`
	if on {
		body = `{"paused":true}`
	}
	req, _ := http.NewRequest("PUT", p.BaseURL+"/admin/v1/shows/"+show+"/queue", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("pause %v: %v", on, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pause %v: %s", on, res.Status)
	}
}

func waitGate(t *testing.T, base, show string) {
	t.Helper()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest("GET", base+"/shows/"+show, nil)
		req.Header.Set("Accept", "text/html")
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusSeeOther {
			return
		}
	}
	t.Fatal("the gate never turned the queue on")
}

// seesItsHoldPolled: on a seat map that polls (its live line starts with live), a seat the fan holds through the
// API, beside the page, shows as held within a few seconds.
func seesItsHoldPolled(t *testing.T, fan *browsertest.Fan, show, live string) {
	t.Helper()
	fan.WaitFor("the seat map, polled", seat("A1")+` !== null && document.getElementById("live").textContent.startsWith("`+live+`")`)
	if got := fan.Text(seat("A1") + `.getAttribute("aria-label")`); !strings.HasSuffix(got, ", available") {
		t.Fatalf("A1 is %q", got)
	}
	held := fan.Await(`fetch("/api/v1/bookings/hold", {method: "POST", headers: {"Content-Type": "application/json", "X-Requested-With": "flashseat"},
		body: JSON.stringify({showId: "` + show + `", seatIds: ["A1"]})}).then((r) => r.text().then((b) => r.status + " " + b))`)
	if !strings.HasPrefix(held, "201 ") {
		t.Fatalf("hold: %s", held)
	}
	fan.WaitFor("A1 held", seat("A1")+`.getAttribute("aria-label").endsWith(", held")`)
}

// receiptSeq is the ticket a place receipt names (0: none, the fan joined before the draw), read from its claims;
// the signature is the waiting room's business.
func receiptSeq(t *testing.T, receipt string) int64 {
	t.Helper()
	if receipt == "" {
		t.Fatal("no place receipt cookie")
	}
	parts := strings.Split(receipt, ".")
	if len(parts) != 3 {
		t.Fatalf("receipt %q is not a JWS", receipt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct{ Seq int64 }
	if err == nil {
		err = json.Unmarshal(b, &claims)
	}
	if err != nil {
		t.Fatalf("receipt claims: %v", err)
	}
	return claims.Seq
}
