package http_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestBadInput sends malformed and hostile requests to every route: each must get a 4xx problem+json answer,
// never a 5xx or a panic, and must change nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	user := h.user("fan")
	forged := user[:len(user)-4] + "AAAA"
	eleven := []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11"}
	huge := `{"showId":"` + show + `","seatIds":["` + strings.Repeat("A", 40000) + `"]}`
	tests := []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"hold without token", "POST", "/api/v1/bookings/hold", "", holdBody(show, "A1"), 401},
		{"hold with forged token", "POST", "/api/v1/bookings/hold", forged, holdBody(show, "A1"), 401},
		{"hold with junk token", "POST", "/api/v1/bookings/hold", "not-a-jwt", holdBody(show, "A1"), 401},
		{"hold with admin token", "POST", "/api/v1/bookings/hold", adminToken, holdBody(show, "A1"), 401},
		{"hold empty body", "POST", "/api/v1/bookings/hold", user, "", 400},
		{"hold bad json", "POST", "/api/v1/bookings/hold", user, `{"showId":`, 400},
		{"hold json array", "POST", "/api/v1/bookings/hold", user, `[1,2]`, 400},
		{"hold json null", "POST", "/api/v1/bookings/hold", user, `null`, 400},
		{"hold trailing data", "POST", "/api/v1/bookings/hold", user, holdBody(show, "A1") + `{}`, 400},
		{"hold seatIds a string", "POST", "/api/v1/bookings/hold", user, `{"showId":"` + show + `","seatIds":"A1"}`, 400},
		{"hold seatIds numbers", "POST", "/api/v1/bookings/hold", user, `{"showId":"` + show + `","seatIds":[1,2]}`, 400},
		{"hold showId a number", "POST", "/api/v1/bookings/hold", user, `{"showId":12,"seatIds":["A1"]}`, 400},
		{"hold no showId", "POST", "/api/v1/bookings/hold", user, `{"seatIds":["A1"]}`, 400},
		{"hold no seats", "POST", "/api/v1/bookings/hold", user, holdBody(show), 422},
		{"hold null seats", "POST", "/api/v1/bookings/hold", user, `{"showId":"` + show + `","seatIds":null}`, 422},
		{"hold duplicate seats", "POST", "/api/v1/bookings/hold", user, holdBody(show, "A1", "A1"), 422},
		{"hold unknown seat", "POST", "/api/v1/bookings/hold", user, holdBody(show, "Z99"), 422},
		{"hold too many seats", "POST", "/api/v1/bookings/hold", user, holdBody(show, eleven...), 422},
		{"hold unknown show", "POST", "/api/v1/bookings/hold", user, holdBody("sh_nope", "A1"), 404},
		{"hold junk unicode show", "POST", "/api/v1/bookings/hold", user, holdBody("\u202e\u0000💥", "A1"), 404},
		{"hold junk unicode seat", "POST", "/api/v1/bookings/hold", user, holdBody(show, "A\u0301", "\xff\xfe", "😀"), 422},
		{"hold huge body", "POST", "/api/v1/bookings/hold", user, huge, 413},
		{"hold huge key", "POST", "/api/v1/bookings/hold", user, holdBody(show, "A1") + strings.Repeat(" ", 10), 400},
		{"get unknown booking", "GET", "/api/v1/bookings/bk_nope", user, "", 404},
		{"get junk booking id", "GET", "/api/v1/bookings/%E2%80%AE%00", user, "", 404},
		{"get booking without token", "GET", "/api/v1/bookings/bk_nope", "", "", 401},
		{"cancel unknown booking", "DELETE", "/api/v1/bookings/bk_nope", user, "", 404},
		{"unknown show", "GET", "/api/v1/shows/sh_nope", "", "", 404},
		{"junk show id", "GET", "/api/v1/shows/%F0%9F%92%A5'%20OR%201=1", "", "", 404},
		{"seats of unknown show", "GET", "/api/v1/shows/sh_nope/seats", "", "", 404},
		{"stream of unknown show", "GET", "/api/v1/shows/sh_nope/seats/stream", "", "", 404},
		{"page of junk show", "GET", "/shows/%00", "", "", 404},
		{"search bad date", "GET", "/api/v1/events?date=tomorrow", "", "", 400},
		{"search junk city", "GET", "/api/v1/events?city=%FF%00", "", "", 400},
		{"guest with wrong method", "GET", "/api/v1/auth/guest", "", "", 405},
		{"unknown route", "GET", "/api/v2/whatever", "", "", 404},
		{"venue without token", "POST", "/admin/v1/venues", "", `{}`, 401},
		{"venue with user token", "POST", "/admin/v1/venues", user, `{}`, 403},
		{"venue bad json", "POST", "/admin/v1/venues", adminToken, `{"name":`, 400},
		{"venue no halls", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[]}`, 422},
		{"venue no name", "POST", "/admin/v1/venues", adminToken, `{"city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":1,"category":"GOLD"}]}]}`, 422},
		{"venue control chars", "POST", "/admin/v1/venues", adminToken, `{"name":"V\u0007","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":1,"category":"GOLD"}]}]}`, 422},
		{"venue invalid utf8", "POST", "/admin/v1/venues", adminToken, "{\"name\":\"V\xff\",\"city\":\"C\",\"halls\":[{\"name\":\"H\",\"rows\":[{\"row\":\"A\",\"seats\":1,\"category\":\"GOLD\"}]}]}", 422},
		{"venue lowercase row", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"a","seats":1,"category":"GOLD"}]}]}`, 422},
		{"venue zero seats", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":0,"category":"GOLD"}]}]}`, 422},
		{"venue negative seats", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":-5,"category":"GOLD"}]}]}`, 422},
		{"venue huge row", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":99999999999,"category":"GOLD"}]}]}`, 422},
		{"venue seats overflow", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":1e400,"category":"GOLD"}]}]}`, 400},
		{"venue duplicate rows", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":1,"category":"GOLD"},{"row":"A","seats":1,"category":"GOLD"}]}]}`, 422},
		{"venue bad category", "POST", "/admin/v1/venues", adminToken, `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":1,"category":"gold 1"}]}]}`, 422},
		{"event no duration", "POST", "/admin/v1/events", adminToken, `{"title":"T","kind":"movie"}`, 422},
		{"event wrong type", "POST", "/admin/v1/events", adminToken, `{"title":"T","kind":"movie","durationMinutes":"90"}`, 400},
		{"show unknown event", "POST", "/admin/v1/shows", adminToken, `{"eventId":"ev_nope","hallId":"hl_nope","startsAt":"2030-01-01T10:00:00Z","saleStartsAt":"2029-01-01T10:00:00Z","currency":"INR","prices":{"GOLD":1}}`, 422},
		{"show bad time", "POST", "/admin/v1/shows", adminToken, `{"eventId":"ev_x","hallId":"hl_x","startsAt":"tomorrow","saleStartsAt":"2029-01-01T10:00:00Z","currency":"INR","prices":{"GOLD":1}}`, 422},
		{"show sale after start", "POST", "/admin/v1/shows", adminToken, `{"eventId":"ev_x","hallId":"hl_x","startsAt":"2030-01-01T10:00:00Z","saleStartsAt":"2031-01-01T10:00:00Z","currency":"INR","prices":{"GOLD":1}}`, 422},
		{"show bad currency", "POST", "/admin/v1/shows", adminToken, `{"eventId":"ev_x","hallId":"hl_x","startsAt":"2030-01-01T10:00:00Z","saleStartsAt":"2029-01-01T10:00:00Z","currency":"rupees","prices":{"GOLD":1}}`, 422},
		{"show negative price", "POST", "/admin/v1/shows", adminToken, `{"eventId":"ev_x","hallId":"hl_x","startsAt":"2030-01-01T10:00:00Z","saleStartsAt":"2029-01-01T10:00:00Z","currency":"INR","prices":{"GOLD":-1}}`, 422},
		{"show fractional price", "POST", "/admin/v1/shows", adminToken, `{"eventId":"ev_x","hallId":"hl_x","startsAt":"2030-01-01T10:00:00Z","saleStartsAt":"2029-01-01T10:00:00Z","currency":"INR","prices":{"GOLD":1.5}}`, 400},
		{"stats of unknown show", "GET", "/admin/v1/shows/sh_nope/stats", adminToken, "", 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := h.with(t)
			var r response
			if tc.name == "hold huge key" {
				r = h.do(tc.method, tc.path, tc.auth, tc.body, "Idempotency-Key", strings.Repeat("k", 300))
			} else {
				r = h.do(tc.method, tc.path, tc.auth, tc.body)
			}
			if r.status != tc.want {
				t.Fatalf("got %d, want %d: %s", r.status, tc.want, r.body)
			}
			problemOf(t, r)
		})
	}
	assertUnchanged(t, h)
}

// assertUnchanged checks that no bad request left a trace: no booking, no lock, no extra catalog rows.
func assertUnchanged(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	for table, want := range map[string]int{"bookings": 0, "venues": 1, "events": 1, "shows": 1, "idempotency_keys": 0} {
		var n int
		if err := h.env.Pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s", table)).Scan(&n); err != nil || n != want {
			t.Errorf("%s: %d rows (%v), want %d", table, n, err, want)
		}
	}
	keys, _ := h.env.RDB.Keys(ctx, "{show:"+h.env.Show.ID+"}:seat:*").Result()
	if len(keys) != 0 {
		t.Errorf("seat locks left: %v", keys)
	}
}

// FuzzHold throws arbitrary bodies and headers at the hold route. The seeds live in testdata/fuzz/FuzzHold.
func FuzzHold(f *testing.F) {
	h := newHarness(f, newEnv(f))
	user := h.user("fuzzer")
	f.Add(holdBody(h.env.Show.ID, "A1"), "k")
	f.Fuzz(func(t *testing.T, body, key string) {
		h := h.with(t)
		body = strings.ReplaceAll(body, "$SHOW", h.env.Show.ID)
		r := h.do("POST", "/api/v1/bookings/hold", user, body, "Idempotency-Key", strings.Map(func(r rune) rune {
			if r < 0x20 || r > 0x7e {
				return -1 // net/http refuses such header values before they reach us
			}
			return r
		}, key))
		if r.status >= 500 {
			t.Fatalf("status %d for %q: %s", r.status, body, r.body)
		}
		if r.status >= 400 {
			problemOf(t, r)
		}
		if r.status == 201 {
			// Free the seats again so later inputs meet the same state.
			var b struct{ BookingID string }
			r.json(t, &b)
			h.do("DELETE", "/api/v1/bookings/"+b.BookingID, user, "")
		}
	})
}

// FuzzVenue throws arbitrary bodies at the operator's venue route.
func FuzzVenue(f *testing.F) {
	h := newHarness(f, newEnv(f))
	f.Add(`{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":2,"category":"GOLD"}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		h := h.with(t)
		r := h.do("POST", "/admin/v1/venues", adminToken, body)
		if r.status >= 500 {
			t.Fatalf("status %d for %q: %s", r.status, body, r.body)
		}
		if r.status >= 400 {
			problemOf(t, r)
		}
	})
}
