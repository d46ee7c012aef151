package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/token"
)

func TestHoldFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	var g struct{ UserID, Token string }
	r := h.do("POST", "/api/v1/auth/guest", "", "")
	if r.status != 201 {
		t.Fatalf("guest: %d %s", r.status, r.body)
	}
	r.json(t, &g)
	if g.UserID == "" || g.Token == "" {
		t.Fatalf("guest = %s", r.body)
	}

	r = h.do("POST", "/api/v1/bookings/hold", g.Token, holdBody(show, "D5", "D6"), "Idempotency-Key", "k1")
	if r.status != 201 {
		t.Fatalf("hold: %d %s", r.status, r.body)
	}
	var held struct {
		BookingID, Status, ShowID, Currency string
		SeatIDs                             []string
		TotalAmount                         int64
		ExpiresAt                           time.Time
	}
	r.json(t, &held)
	if held.Status != "HELD" || held.TotalAmount != 90000 || held.Currency != "INR" || len(held.SeatIDs) != 2 ||
		time.Until(held.ExpiresAt) < 9*time.Minute {
		t.Fatalf("hold = %s", r.body)
	}
	// The same key and body replays the first response.
	if again := h.do("POST", "/api/v1/bookings/hold", g.Token, holdBody(show, "D5", "D6"), "Idempotency-Key", "k1"); again.status != 201 || string(again.body) != string(r.body) {
		t.Fatalf("replay: %d %s, want %s", again.status, again.body, r.body)
	}
	if other := h.do("POST", "/api/v1/bookings/hold", g.Token, holdBody(show, "D9"), "Idempotency-Key", "k1"); other.status != 422 {
		t.Fatalf("reused key: %d %s", other.status, other.body)
	}

	// Another fan is turned away with alternatives.
	r = h.do("POST", "/api/v1/bookings/hold", h.user("rival"), holdBody(show, "D6", "D7"))
	p := problemOf(t, r)
	if r.status != 409 || !strings.HasSuffix(p.Type, "/seats-unavailable") {
		t.Fatalf("conflict: %d %s", r.status, r.body)
	}
	if u, _ := p.Extensions["unavailable"].([]any); len(u) != 1 || u[0] != "D6" {
		t.Fatalf("unavailable = %v", p.Extensions["unavailable"])
	}
	if a, _ := p.Extensions["alternatives"].([]any); len(a) != 2 {
		t.Fatalf("alternatives = %v", p.Extensions["alternatives"])
	}

	// The seat map shows the hold.
	r = h.do("GET", "/api/v1/shows/"+show+"/seats", "", "")
	var m struct {
		Seats []struct{ SeatID, Status string }
	}
	r.json(t, &m)
	status := map[string]string{}
	for _, s := range m.Seats {
		status[s.SeatID] = s.Status
	}
	if len(m.Seats) != 200 || status["D5"] != "HELD" || status["D7"] != "AVAILABLE" {
		t.Fatalf("seat map: %d seats, D5 %s, D7 %s", len(m.Seats), status["D5"], status["D7"])
	}
	r = h.do("GET", "/api/v1/shows/"+show, "", "")
	var sh struct{ AvailableSeats, TotalSeats int }
	r.json(t, &sh)
	if sh.AvailableSeats != 198 || sh.TotalSeats != 200 {
		t.Fatalf("show = %s", r.body)
	}

	// Only the owner sees and cancels the booking.
	if r := h.do("GET", "/api/v1/bookings/"+held.BookingID, h.user("rival"), ""); r.status != 404 {
		t.Fatalf("other user's booking: %d", r.status)
	}
	r = h.do("GET", "/api/v1/bookings/"+held.BookingID, g.Token, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"tickets":[]`) {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	r = h.do("DELETE", "/api/v1/bookings/"+held.BookingID, g.Token, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"CANCELLED"`) || !strings.Contains(string(r.body), `"D5"`) {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if r := h.do("DELETE", "/api/v1/bookings/"+held.BookingID, g.Token, ""); r.status != 409 {
		t.Fatalf("second cancel: %d %s", r.status, r.body)
	}

	// Catalog.
	r = h.do("GET", "/api/v1/events?city=bangalore&q=prem", "", "")
	if r.status != 200 || !strings.Contains(string(r.body), show) {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	r = h.do("GET", "/api/v1/events?city=Mumbai", "", "")
	if r.status != 200 || strings.Contains(string(r.body), show) {
		t.Fatalf("search other city: %d %s", r.status, r.body)
	}
	day := h.env.Show.StartsAt.Format(time.DateOnly)
	if r := h.do("GET", "/api/v1/events?date="+day, "", ""); !strings.Contains(string(r.body), show) {
		t.Fatalf("search by date: %s", r.body)
	}
	r = h.do("GET", "/admin/v1/shows/"+show+"/stats", adminToken, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"holdsTotal":1`) {
		t.Fatalf("stats: %d %s", r.status, r.body)
	}
}

func TestOperatorAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	r := h.do("POST", "/admin/v1/venues", adminToken, `{"name":"Hall of Fame","city":"Pune","halls":[{"name":"Main",
		"rows":[{"row":"A","seats":3,"category":"GOLD"},{"row":"B","seats":4,"category":"SILVER"}]}]}`)
	if r.status != 201 {
		t.Fatalf("venue: %d %s", r.status, r.body)
	}
	var v struct {
		VenueID string
		Halls   []struct {
			HallID string
			Seats  int
		}
	}
	r.json(t, &v)
	if len(v.Halls) != 1 || v.Halls[0].Seats != 7 {
		t.Fatalf("venue = %s", r.body)
	}
	r = h.do("POST", "/admin/v1/events", adminToken, `{"title":"Gig","kind":"concert","durationMinutes":120}`)
	var e struct{ EventID string }
	r.json(t, &e)
	body, _ := json.Marshal(map[string]any{"eventId": e.EventID, "hallId": v.Halls[0].HallID,
		"startsAt": time.Now().Add(72 * time.Hour).Format(time.RFC3339), "saleStartsAt": time.Now().Add(time.Hour).Format(time.RFC3339),
		"currency": "INR", "prices": map[string]int{"GOLD": 100, "SILVER": 50}})
	r = h.do("POST", "/admin/v1/shows", adminToken, string(body))
	if r.status != 201 {
		t.Fatalf("show: %d %s", r.status, r.body)
	}
	var s struct{ ShowID string }
	r.json(t, &s)
	t.Cleanup(func() { bookingtest.DeleteShowKeys(h.env.RDB, s.ShowID) })
	// ShowInfo is published at creation, for the waiting room.
	info, _ := h.env.RDB.HGetAll(context.Background(), "{show:"+s.ShowID+"}:info").Result()
	if info["totalSeats"] != "7" || info["available"] != "7" || info["saleStartsAt"] == "" {
		t.Fatalf("show info = %v", info)
	}
	// The sale has not opened.
	r = h.do("POST", "/api/v1/bookings/hold", h.user("u"), holdBody(s.ShowID, "A1"))
	if r.status != 422 {
		t.Fatalf("hold before the sale: %d %s", r.status, r.body)
	}
}

func TestQueueGate(t *testing.T) {
	t.Parallel()
	key, _ := token.GenerateKey()
	issuer := token.NewIssuer(key)
	env := bookingtest.NewGated(t, booking.Config{}, token.NewStaticKeys(key.Public()))
	h := newHarness(t, env)
	show := env.Show.ID
	ctx := context.Background()
	env.QueueOn(t, show, admission.Settings{Enabled: true, AdmitPerSecond: 10, MaxActive: 10, TokenTTLSeconds: 600})
	user := h.user("fan1")
	r := h.do("POST", "/api/v1/bookings/hold", user, holdBody(show, "A1"))
	p := problemOf(t, r)
	if r.status != 403 || p.Extensions["queueUrl"] != "/queue/"+show || p.Extensions["reason"] != "missing" {
		t.Fatalf("no admission: %d %s", r.status, r.body)
	}
	other, _, _ := issuer.Issue("fan2", show, "j0", time.Now(), time.Minute)
	if r := h.do("POST", "/api/v1/bookings/hold", user, holdBody(show, "A1"), admission.Header, other); r.status != 403 {
		t.Fatalf("someone else's admission: %d %s", r.status, r.body)
	}
	adm, _, _ := issuer.Issue("fan1", show, "j1", time.Now(), time.Minute)
	r = h.do("POST", "/api/v1/bookings/hold", user, holdBody(show, "A1"), "Cookie", admission.CookieName(show)+"="+adm)
	if r.status != 201 {
		t.Fatalf("admitted: %d %s", r.status, r.body)
	}
	var b struct{ BookingID string }
	r.json(t, &b)
	if err := env.RDB.ZAdd(ctx, "{show:"+show+"}:queue:active", goredisZ(time.Now().Add(time.Minute), "j1")).Err(); err != nil {
		t.Fatal(err)
	}
	// Cancelling frees the fan's slot and revokes the token.
	if r := h.do("DELETE", "/api/v1/bookings/"+b.BookingID, user, ""); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if n, _ := env.RDB.ZCard(ctx, "{show:"+show+"}:queue:active").Result(); n != 0 {
		t.Fatalf("active slots after cancel: %d", n)
	}
	if r := h.do("POST", "/api/v1/bookings/hold", user, holdBody(show, "A1"), admission.Header, adm); r.status != 403 ||
		problemOf(t, r).Extensions["reason"] != "revoked" {
		t.Fatalf("revoked admission: %d %s", r.status, r.body)
	}
	var q struct{ QueueEnabled bool }
	h.do("GET", "/api/v1/shows/"+show, "", "").json(t, &q)
	if !q.QueueEnabled {
		t.Fatal("queueEnabled false for a show with its queue on")
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	if r := h.do("GET", "/healthz", "", ""); r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
	if r := h.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz: %d", r.status)
	}
}
