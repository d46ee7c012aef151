package http_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/showstats"
)

// TestAdminStats: GET /admin/v1/stats lists every upcoming show with its live counts in one call.
func TestAdminStats(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	if r := h.do("POST", "/api/v1/bookings/hold", h.user("fan1"), holdBody(show, "A1", "A2")); r.status != 201 {
		t.Fatalf("hold: %d %s", r.status, r.body)
	}
	var got showstats.Stats
	r := h.do("GET", "/admin/v1/stats", adminToken, "")
	if r.status != 200 {
		t.Fatalf("stats: %d %s", r.status, r.body)
	}
	r.json(t, &got)
	var found *showstats.Show
	for i := range got.Shows {
		if got.Shows[i].ShowID == show {
			found = &got.Shows[i]
		}
	}
	if found == nil {
		t.Fatalf("show %s missing from %s", show, r.body)
	}
	if found.Held != 2 || found.Available != found.TotalSeats-2 || found.Booked != 0 || found.Title == "" ||
		found.SaleClosedAt != nil || found.HoldsTotal < 1 {
		t.Fatalf("figures %+v", *found)
	}
	if got.Breaker != "closed" {
		t.Fatalf("breaker %q", got.Breaker)
	}
}

// TestAdminSaleOpeningAndClose moves a show's sale opening and closes its sale: the hold path of this replica and
// of another replica (which learns of the change through Redis) follows within a second, and ShowInfo carries
// the new opening (the waiting room's draw time) and the closed flag.
func TestAdminSaleOpeningAndClose(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	h := newHarness(t, env)
	show := env.Show.ID
	other := bookingtest.NewOn(t, env.Pool, env.RDB, booking.Config{})
	oh := newHarness(t, other)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go redis.WatchShows(ctx, env.RDB, other.Svc.ShowChanged)
	// The other replica caches the show as on sale.
	if r := oh.do("POST", "/api/v1/bookings/hold", oh.user("early"), holdBody(show, "J1")); r.status != 201 {
		t.Fatalf("hold on the other replica: %d %s", r.status, r.body)
	}
	time.Sleep(100 * time.Millisecond) // the subscription is live

	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r := h.do("PATCH", "/admin/v1/shows/"+show, adminToken, `{"saleStartsAt":"`+opens.Format(time.RFC3339)+`"}`)
	if r.status != 200 || !strings.Contains(string(r.body), opens.Format(time.RFC3339)) {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	ms, err := env.RDB.HGet(ctx, rediskey.ShowInfo(show), rediskey.InfoSaleStartsAt).Int64()
	if err != nil || ms != opens.UnixMilli() {
		t.Fatalf("ShowInfo saleStartsAt %d, %v; want %d", ms, err, opens.UnixMilli())
	}
	for _, hh := range []*harness{h, oh} {
		awaitStatus(t, hh, holdBody(show, "B1"), 422, "sale-not-open")
	}

	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	if r := h.do("PATCH", "/admin/v1/shows/"+show, adminToken, `{"saleStartsAt":"`+past+`"}`); r.status != 200 {
		t.Fatalf("reopen: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/admin/v1/shows/"+show+"/close", adminToken, ""); r.status != 200 ||
		!strings.Contains(string(r.body), `"saleClosedAt":"`) {
		t.Fatalf("close: %d %s", r.status, r.body)
	}
	for _, hh := range []*harness{h, oh} {
		awaitStatus(t, hh, holdBody(show, "C1"), 409, "sale-closed")
	}
	if v, err := env.RDB.HGet(ctx, rediskey.ShowInfo(show), rediskey.InfoClosed).Result(); err != nil || v != "1" {
		t.Fatalf("ShowInfo closed %q, %v", v, err)
	}
	// Closing again changes nothing and answers the same.
	if r := h.do("POST", "/admin/v1/shows/"+show+"/close", adminToken, "", "X-Operator", "console:Ravi"); r.status != 200 {
		t.Fatalf("close again: %d %s", r.status, r.body)
	}

	// Every change is in the audit log, newest first, with who made it and the values before and after.
	var log struct{ Entries []audit.Entry }
	r = h.do("GET", "/admin/v1/audit?showId="+show, adminToken, "")
	if r.status != 200 {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	r.json(t, &log)
	var actions []string
	for _, e := range log.Entries {
		actions = append(actions, e.Actor+" "+e.Action)
	}
	if want := []string{"api show.close", "api show.saleStartsAt", "api show.saleStartsAt"}; !slices.Equal(actions, want) {
		t.Fatalf("audit actions %q, want %q", actions, want)
	}
	if last := log.Entries[2]; !strings.Contains(string(last.New), opens.Format(time.RFC3339)) || last.Old == nil {
		t.Fatalf("first change recorded as %s -> %s", last.Old, last.New)
	}
	// Of some actions, since a time: what the console's rate chart asks for.
	since := log.Entries[1].At.Format(time.RFC3339Nano)
	r = h.do("GET", "/admin/v1/audit?showId="+show+"&action=show.saleStartsAt,queue.settings&since="+url.QueryEscape(since), adminToken, "")
	log.Entries = nil
	r.json(t, &log)
	if r.status != 200 || len(log.Entries) != 1 || log.Entries[0].Action != "show.saleStartsAt" {
		t.Fatalf("audit of one action since the second change: %d %s", r.status, r.body)
	}
	for _, q := range []string{"since=yesterday", "action=,", "action=" + strings.Repeat("a,", 21) + "a"} {
		if r := h.do("GET", "/admin/v1/audit?"+q, adminToken, ""); r.status != 400 && r.status != 422 {
			t.Errorf("audit?%s: %d %s, want a 4xx problem", q, r.status, r.body)
		}
	}
}

// TestAdminAuditActor: the console's edge names the operator in X-Operator, and the log records it.
func TestAdminAuditActor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	if r := h.do("POST", "/admin/v1/shows/"+show+"/close", adminToken, "", "X-Operator", "console:Ravi"); r.status != 200 {
		t.Fatalf("close: %d %s", r.status, r.body)
	}
	var log struct{ Entries []audit.Entry }
	r := h.do("GET", "/admin/v1/audit?limit=1", adminToken, "")
	r.json(t, &log)
	if len(log.Entries) != 1 || log.Entries[0].Actor != "console:Ravi" || log.Entries[0].ShowID != show {
		t.Fatalf("audit: %s", r.body)
	}
}

// awaitStatus holds until the answer has the wanted status and problem type, for at most a second.
func awaitStatus(t *testing.T, h *harness, body string, status int, slug string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		r := h.do("POST", "/api/v1/bookings/hold", h.user("late"), body)
		if r.status == status {
			if p := problemOf(t, r); !strings.HasSuffix(p.Type, "/"+slug) {
				t.Fatalf("problem type %q, want /%s", p.Type, slug)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hold still answers %d %s after a second; want %d", r.status, r.body, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAdminLookup finds a fan's bookings by booking id and by user id, whoever's they are.
func TestAdminLookup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	r := h.do("POST", "/api/v1/bookings/hold", h.user("fan-look"), holdBody(h.env.Show.ID, "D3"))
	if r.status != 201 {
		t.Fatalf("hold: %d %s", r.status, r.body)
	}
	var held struct{ BookingID string }
	r.json(t, &held)

	var one bookinghttp.AdminBookingJSON
	r = h.do("GET", "/admin/v1/bookings/"+held.BookingID, adminToken, "")
	if r.status != 200 {
		t.Fatalf("lookup: %d %s", r.status, r.body)
	}
	r.json(t, &one)
	if one.UserID != "fan-look" || one.Status != booking.StatusHeld || one.CreatedAt.IsZero() {
		t.Fatalf("lookup: %s", r.body)
	}
	var list struct {
		UserID   string
		Bookings []bookinghttp.AdminBookingJSON
	}
	r = h.do("GET", "/admin/v1/users/fan-look/bookings", adminToken, "")
	if r.status != 200 {
		t.Fatalf("user lookup: %d %s", r.status, r.body)
	}
	r.json(t, &list)
	if len(list.Bookings) != 1 || list.Bookings[0].UserID != "fan-look" {
		t.Fatalf("user lookup: %s", r.body)
	}
	if r := h.do("GET", "/admin/v1/users/nobody/bookings", adminToken, ""); r.status != 200 ||
		!strings.Contains(string(r.body), `"bookings":[]`) {
		t.Fatalf("unknown user: %d %s", r.status, r.body)
	}
}

// TestAdminBadInput: every new operator route answers bad input with a 4xx problem+json and changes nothing.
func TestAdminBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	user := h.user("fan")
	after := h.env.Show.StartsAt.Add(time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"stats without token", "GET", "/admin/v1/stats", "", "", 401},
		{"stats with user token", "GET", "/admin/v1/stats", user, "", 403},
		{"patch without token", "PATCH", "/admin/v1/shows/" + show, "", `{"saleStartsAt":"2030-01-01T00:00:00Z"}`, 401},
		{"patch with user token", "PATCH", "/admin/v1/shows/" + show, user, `{"saleStartsAt":"2030-01-01T00:00:00Z"}`, 403},
		{"patch empty body", "PATCH", "/admin/v1/shows/" + show, adminToken, "", 400},
		{"patch bad json", "PATCH", "/admin/v1/shows/" + show, adminToken, `{"saleStartsAt":`, 400},
		{"patch wrong type", "PATCH", "/admin/v1/shows/" + show, adminToken, `{"saleStartsAt":12}`, 400},
		{"patch no field", "PATCH", "/admin/v1/shows/" + show, adminToken, `{}`, 422},
		{"patch bad time", "PATCH", "/admin/v1/shows/" + show, adminToken, `{"saleStartsAt":"tomorrow"}`, 422},
		{"patch after show", "PATCH", "/admin/v1/shows/" + show, adminToken, `{"saleStartsAt":"` + after + `"}`, 422},
		{"patch ancient", "PATCH", "/admin/v1/shows/" + show, adminToken, `{"saleStartsAt":"0001-01-01T00:00:00Z"}`, 422},
		{"patch unknown show", "PATCH", "/admin/v1/shows/sh_nope", adminToken, `{"saleStartsAt":"2030-01-01T00:00:00Z"}`, 404},
		{"patch junk show", "PATCH", "/admin/v1/shows/%E2%80%AE%00", adminToken, `{"saleStartsAt":"2030-01-01T00:00:00Z"}`, 404},
		{"close without token", "POST", "/admin/v1/shows/" + show + "/close", "", "", 401},
		{"close with user token", "POST", "/admin/v1/shows/" + show + "/close", user, "", 403},
		{"close unknown show", "POST", "/admin/v1/shows/sh_nope/close", adminToken, "", 404},
		{"booking without token", "GET", "/admin/v1/bookings/bk_nope", "", "", 401},
		{"booking unknown", "GET", "/admin/v1/bookings/bk_nope", adminToken, "", 404},
		{"booking junk id", "GET", "/admin/v1/bookings/%E2%80%AE", adminToken, "", 404},
		{"user bookings with user token", "GET", "/admin/v1/users/fan/bookings", user, "", 403},
		{"user bookings junk id", "GET", "/admin/v1/users/%20x/bookings", adminToken, "", 404},
		{"audit without token", "GET", "/admin/v1/audit", "", "", 401},
		{"audit with user token", "GET", "/admin/v1/audit", user, "", 403},
		{"audit limit zero", "GET", "/admin/v1/audit?limit=0", adminToken, "", 400},
		{"audit limit huge", "GET", "/admin/v1/audit?limit=1000000", adminToken, "", 400},
		{"audit limit words", "GET", "/admin/v1/audit?limit=ten", adminToken, "", 400},
		{"audit junk show", "GET", "/admin/v1/audit?showId=%E2%80%AE", adminToken, "", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.with(t).do(tc.method, tc.path, tc.auth, tc.body)
			if r.status != tc.want {
				t.Fatalf("%s %s: status %d (%s), want %d", tc.method, tc.path, r.status, r.body, tc.want)
			}
			problemOf(t, r)
		})
	}
	// Nothing changed: the show is still on sale.
	if r := h.do("POST", "/api/v1/bookings/hold", user, holdBody(show, "A1")); r.status != 201 {
		t.Fatalf("hold after bad input: %d %s", r.status, r.body)
	}
}
