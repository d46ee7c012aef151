package app_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestWaitlist: a show with seats on sale refuses the waitlist (409); once every seat is held, fans join first
// come first served, a fan joining again keeps the place, and bad input is a 4xx problem.
func TestWaitlist(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: startBooking(t, nil, nil)}
	var v struct {
		Halls []struct{ HallID string }
	}
	c.call("POST", "/admin/v1/venues", testAdmin, map[string]any{"name": "Tiny", "city": "Pune",
		"halls": []any{map[string]any{"name": "Box", "rows": []any{map[string]any{"row": "A", "seats": 2, "category": "GOLD"}}}}}, &v)
	var e struct{ EventID string }
	c.call("POST", "/admin/v1/events", testAdmin, map[string]any{"title": "Tiny gig", "kind": "concert", "durationMinutes": 60}, &e)
	var s struct{ ShowID string }
	if st := c.call("POST", "/admin/v1/shows", testAdmin, map[string]any{"eventId": e.EventID, "hallId": v.Halls[0].HallID,
		"startsAt":     time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339),
		"saleStartsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"currency":     "INR", "prices": map[string]int{"GOLD": 1000}}, &s); st != http.StatusCreated {
		t.Fatalf("show: %d", st)
	}
	guest := func() string {
		var g struct{ Token string }
		c.call("POST", "/api/v1/auth/guest", "", nil, &g)
		return g.Token
	}
	path := "/api/v1/shows/" + s.ShowID + "/waitlist"
	first := guest()

	var p struct {
		Type   string
		Status int
	}
	if st := c.call("POST", path, first, map[string]int{"seats": 1}, &p); st != http.StatusConflict || p.Status != 409 {
		t.Fatalf("waitlist with seats on sale: got %d %+v, want 409 problem", st, p)
	}
	if st := c.call("POST", "/api/v1/bookings/hold", guest(), map[string]any{"showId": s.ShowID, "seatIds": []string{"A1", "A2"}}, nil); st != http.StatusCreated {
		t.Fatalf("hold: %d", st)
	}

	type entry struct{ Position, Seats int }
	var got entry
	if st := c.call("POST", path, first, map[string]int{"seats": 2}, &got); st != http.StatusCreated || got.Position != 1 || got.Seats != 2 {
		t.Fatalf("first join: got %d %+v, want 201 position 1", st, got)
	}
	// Ten more fans at once: each gets a distinct place after the first.
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var e entry
			if st := c.call("POST", path, guest(), map[string]int{"seats": 1}, &e); st != http.StatusCreated {
				t.Errorf("join: %d", st)
			}
			mu.Lock()
			seen[e.Position] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	for pos := 2; pos <= 11; pos++ {
		if !seen[pos] {
			t.Fatalf("positions %v: want each of 2..11 once", seen)
		}
	}
	if st := c.call("POST", path, first, map[string]int{"seats": 3}, &got); st != http.StatusCreated || got.Position != 1 || got.Seats != 3 {
		t.Fatalf("join again: got %d %+v, want the same place with the new count", st, got)
	}

	tests := []struct {
		name, path, auth string
		body             any
		want             int
	}{
		{"no token", path, "", map[string]int{"seats": 1}, http.StatusUnauthorized},
		{"zero seats", path, first, map[string]int{"seats": 0}, http.StatusUnprocessableEntity},
		{"too many seats", path, first, map[string]int{"seats": 11}, http.StatusUnprocessableEntity},
		{"missing seats", path, first, map[string]int{}, http.StatusBadRequest},
		{"wrong type", path, first, map[string]string{"seats": "two"}, http.StatusBadRequest},
		{"unknown show", "/api/v1/shows/nope/waitlist", first, map[string]int{"seats": 1}, http.StatusNotFound},
		{"junk show id", "/api/v1/shows/" + fmt.Sprintf("%s", "%E2%98%83") + "/waitlist", first, map[string]int{"seats": 1}, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p struct{ Status int }
			if st := c.call("POST", tc.path, tc.auth, tc.body, &p); st != tc.want || p.Status != tc.want {
				t.Fatalf("got %d (problem status %d), want %d", st, p.Status, tc.want)
			}
		})
	}
}
