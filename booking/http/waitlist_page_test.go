package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/loadtest/browsertest"
)

// TestWaitlistPanelInBrowser: on a sold-out show the show page offers the waitlist; the fan joins with the form
// and reads their place; when seats come back and the waitlist offers them, the open page says so at once (its
// stream) with a link to pay; leaving gives the offer up and brings the form back. A browser without EventSource
// reads its entry every few seconds instead, and learns of the offer that way; so does one whose stream is refused.
func TestWaitlistPanelInBrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser")
	}
	t.Run("live", func(t *testing.T) { waitlistPanel(t, "") })
	t.Run("without EventSource", func(t *testing.T) { waitlistPanel(t, "no EventSource") })
	t.Run("the stream refused", func(t *testing.T) { waitlistPanel(t, "refused") })
}

// waitlistPanel plays the panel in a browser with its stream as blocked says: not ("", the stream followed), no
// EventSource at all, or the stream refused at the network.
func waitlistPanel(t *testing.T, blocked string) {
	t.Parallel()
	env := newEnv(t)
	w := booking.NewWaitlist(env.Svc, env.Store, booking.WaitlistConfig{OfferTTL: time.Minute,
		Signal: redis.NewWaitlistSignal(env.RDB)})
	feed := redis.NewWaitlistHub(env.RDB)
	t.Cleanup(feed.Close)
	h := newHarness(t, env, func(c *bookinghttp.Config) { c.Waitlist, c.WaitlistFeed = w, feed })
	show := env.Show.ID
	// Rivals hold every seat: the show is sold out.
	var first string
	for r, row := range "ABCDEFGHIJ" {
		for half := range 2 {
			var seats []string
			for n := 1 + 10*half; n <= 10+10*half; n++ {
				seats = append(seats, fmt.Sprintf("%c%d", row, n))
			}
			body, _ := json.Marshal(map[string]any{"showId": show, "seatIds": seats})
			res := h.do("POST", "/api/v1/bookings/hold", h.user(fmt.Sprintf("rival%d-%d", r, half)), string(body))
			if res.status != 201 {
				t.Fatalf("rival hold: %d %s", res.status, res.body)
			}
			if first == "" {
				var b struct{ BookingID string }
				_ = json.Unmarshal(res.body, &b)
				first = b.BookingID
			}
		}
	}

	fan := browsertest.New(t).Fan("fan", 60*time.Second)
	fan.AllowMissing("/checkout/")
	switch blocked {
	case "no EventSource":
		fan.OnNewDocument(`delete window.EventSource;`)
	case "refused":
		fan.FailRequests("*/waitlist/stream")
	}
	status := `document.getElementById("wl-status").textContent`
	fan.Go(h.base + "/shows/" + show)
	fan.WaitFor("the waitlist panel", `!document.getElementById("waitlist").hidden && !document.getElementById("wl-join").hidden`)
	fan.JS(`document.getElementById("wl-seats").value = "2"; document.querySelector("#wl-join button[type=submit]").click()`)
	fan.WaitFor("a place in line", status+`.startsWith("You are number 1 in line for 2 seats")`)

	// Seats come back and the waitlist offers them (its consumer group does this in production).
	if r := h.do("DELETE", "/api/v1/bookings/"+first, h.user("rival0-0"), ""); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	made, err := w.Offer(context.Background(), show)
	if err != nil || len(made) != 1 {
		t.Fatalf("offer: %+v %v", made, err)
	}
	fan.WaitFor("the offer on the open page", `!document.getElementById("wl-offer").hidden`)
	if got := fan.Text(status); !strings.Contains(got, strings.Join(made[0].Offer.SeatIDs, ", ")) || !strings.Contains(got, "held for you") {
		t.Errorf("offer text %q", got)
	}
	if href := fan.Text(`document.getElementById("wl-pay").getAttribute("href")`); href != "/checkout/"+made[0].Offer.BookingID {
		t.Errorf("pay link %q, want the offer's checkout", href)
	}
	if blocked == "no EventSource" {
		for _, u := range fan.URLs() {
			if strings.HasSuffix(u, "/stream") {
				t.Errorf("a page without EventSource opened a stream: %s", u)
			}
		}
	}
	fan.JS(`document.getElementById("wl-leave").click()`)
	fan.WaitFor("the form again", `!document.getElementById("wl-join").hidden && document.getElementById("wl-offer").hidden`)
	if b, err := env.Svc.Booking(context.Background(), made[0].Offer.BookingID, made[0].UserID); err != nil || b.Status != booking.StatusCancelled {
		t.Errorf("offer after leaving: %s %v, want CANCELLED", b.Status, err)
	}
}
