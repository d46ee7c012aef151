package http_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/problem"
)

// TestStoresUnreachable: with PostgreSQL, Redis or both out of reach, every route answers 503 store-unavailable
// with Retry-After where it needs the missing store, and never a 500. The show is seeded on the live stores;
// the server under test then runs on stores pointed at a port nothing listens on.
func TestStoresUnreachable(t *testing.T) {
	t.Parallel()
	live := newEnv(t)
	seed := newHarness(t, live)
	fan := seed.user("fan-outage")
	r := seed.do("POST", "/api/v1/bookings/hold", fan, holdBody(live.Show.ID, "A1"))
	if r.status != 201 {
		t.Fatalf("hold on live stores: %d %s", r.status, r.body)
	}
	var held struct{ BookingID string }
	r.json(t, &held)

	deadPool := storetest.DeadPool(t, live.Pool.Config())
	deadRedis := storetest.DeadRedis(t)

	routes := []struct {
		method, path, auth, body string
		needs                    string // the store the route cannot answer without: "postgres", "redis" or "both"
	}{
		{"GET", "/readyz", "", "", "both"},
		{"GET", "/api/v1/events", "", "", "postgres"},
		{"GET", "/api/v1/shows/" + live.Show.ID, "", "", ""},
		{"GET", "/api/v1/shows/" + live.Show.ID + "/seats", "", "", ""},
		{"POST", "/api/v1/bookings/hold", fan, holdBody(live.Show.ID, "B2"), "both"},
		{"GET", "/api/v1/bookings/" + held.BookingID, fan, "", "postgres"},
		{"DELETE", "/api/v1/bookings/" + held.BookingID, fan, "", "postgres"}, // Redis's release is best effort
		{"POST", "/api/v1/shows/" + live.Show.ID + "/waitlist", fan, `{"seats":1}`, ""},
		{"GET", "/admin/v1/shows/" + live.Show.ID + "/stats", adminToken, "", "postgres"},
		{"POST", "/admin/v1/events", adminToken, `{"title":"Gig","kind":"concert","durationMinutes":90}`, "postgres"},
		{"GET", "/admin/v1/stats", adminToken, "", "both"},
		{"GET", "/admin/v1/audit", adminToken, "", "postgres"},
		{"PATCH", "/admin/v1/shows/" + live.Show.ID, adminToken, `{"saleStartsAt":"2020-01-01T00:00:00Z"}`, "postgres"},
		{"POST", "/admin/v1/shows/" + live.Show.ID + "/close", adminToken, "", "postgres"},
		{"GET", "/admin/v1/users/fan-outage/bookings", adminToken, "", "postgres"},
	}
	cases := []struct {
		name string
		pool *pgxpool.Pool
		rdb  goredis.UniversalClient
	}{
		{"postgres down", deadPool, live.RDB},
		{"redis down", live.Pool, deadRedis},
		{"both down", deadPool, deadRedis},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := &bookingtest.Env{Store: postgres.New(tc.pool), Locks: redis.New(tc.rdb), Pool: tc.pool, RDB: tc.rdb,
				Show: live.Show}
			env.Svc = booking.New(env.Store, env.Locks, nil, booking.Config{})
			h := newHarness(t, env)
			for _, rt := range routes {
				r := h.do(rt.method, rt.path, rt.auth, rt.body)
				if r.status >= 500 && r.status != 503 {
					t.Fatalf("%s %s: %d %s, want never a 5xx but 503", rt.method, rt.path, r.status, r.body)
				}
				must := rt.needs == "both" || (rt.needs == "postgres" && tc.pool == deadPool) ||
					(rt.needs == "redis" && tc.rdb == deadRedis) || (rt.needs != "" && tc.name == "both down")
				if r.status != 503 {
					if must {
						t.Fatalf("%s %s: %d %s, want 503", rt.method, rt.path, r.status, r.body)
					}
					continue
				}
				p := problemOf(t, r)
				if !strings.HasSuffix(p.Type, "/"+problem.StoreUnavailable) || r.header.Get("Retry-After") == "" {
					t.Fatalf("%s %s: %s Retry-After %q, want store-unavailable with Retry-After", rt.method, rt.path,
						r.body, r.header.Get("Retry-After"))
				}
			}
			if tc.pool == deadPool {
				// A browser gets the outage as a page, with the same status and Retry-After.
				r := h.do("GET", "/shows/"+live.Show.ID, "", "", "Accept", "text/html")
				if r.status != 503 || r.header.Get("Retry-After") == "" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
					t.Fatalf("show page: %d %s Retry-After %q, want a 503 page with Retry-After", r.status,
						r.header.Get("Content-Type"), r.header.Get("Retry-After"))
				}
			}
			var ready struct{ Checks map[string]string }
			h.do("GET", "/readyz", "", "").json(t, &ready)
			wantPG, wantRedis := "ok", "ok"
			if tc.pool == deadPool {
				wantPG = "unavailable"
			}
			if tc.rdb == deadRedis {
				wantRedis = "unavailable"
			}
			if ready.Checks["postgres"] != wantPG || ready.Checks["redis"] != wantRedis {
				t.Fatalf("readyz checks %v, want postgres %s, redis %s", ready.Checks, wantPG, wantRedis)
			}
		})
	}
}
