package app_test

import (
	"bufio"
	"context"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	edgeapp "github.com/flashseat/flashseat/edge/app"
	"github.com/flashseat/flashseat/loadtest/platformtest"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/testparallel"
	"github.com/flashseat/flashseat/shared/token"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	cfg, err := app.LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":8081" || cfg.HoldTTL != 10*time.Minute || cfg.MaxSeats != 10 || cfg.ReconcileInterval != 30*time.Second ||
		cfg.RefundWindow != 48*time.Hour || !cfg.AuthGuest || !cfg.AdminTokenGenerated || len(cfg.AuthSecret) < 32 || cfg.SeedDemo ||
		cfg.GCPercent != 400 || cfg.RedisPoolSize != 512 || cfg.DatabaseReadURL != "" || cfg.DatabaseReadMaxLag != time.Second {
		t.Fatalf("defaults = %+v", cfg)
	}
	env := map[string]string{"REDIS_CLUSTER_ADDRS": " 10.0.0.1:7000, 10.0.0.2:7000 ,", "HOLD_TTL": "90s",
		"MAX_SEATS_PER_BOOKING": "4", "AUTH_GUEST": "false", "ADMIN_TOKEN": "0123456789abcdef0123",
		"AUTH_JWKS_URL": "https://id.example/jwks", "AUTH_ISSUER": "https://id.example/", "SEED_DEMO": "true",
		"LOG_LEVEL": "debug", "GOGC": "off", "REDIS_POOL_SIZE": "64", "DATABASE_READ_URL": "postgres://replica/flashseat",
		"DATABASE_READ_MAX_LAG": "250ms"}
	cfg, err = app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.RedisClusterAddrs, []string{"10.0.0.1:7000", "10.0.0.2:7000"}) || cfg.HoldTTL != 90*time.Second ||
		cfg.MaxSeats != 4 || cfg.AuthGuest || cfg.AdminToken != env["ADMIN_TOKEN"] || cfg.AdminTokenGenerated ||
		cfg.AuthExternal == nil || cfg.AuthExternal.Issuer != "https://id.example/" || !cfg.SeedDemo ||
		cfg.LogLevel != slog.LevelDebug || cfg.GCPercent != -1 || cfg.RedisPoolSize != 64 ||
		cfg.DatabaseReadURL != env["DATABASE_READ_URL"] || cfg.DatabaseReadMaxLag != 250*time.Millisecond {
		t.Fatalf("config = %+v", cfg)
	}
	bad := []map[string]string{
		{"HOLD_TTL": "soon"},
		{"HOLD_TTL": "-1s"},
		{"MAX_SEATS_PER_BOOKING": "0"},
		{"AUTH_SECRET": "short"},
		{"ADMIN_TOKEN": "short"},
		{"AUTH_GUEST": "maybe"},
		{"LOG_LEVEL": "loud"},
		{"GOGC": "lots"},
		{"GOGC": "0"},
		{"REDIS_POOL_SIZE": "0"},
		{"REDIS_POOL_SIZE": "-1"},
		{"REDIS_POOL_SIZE": "many"},
		{"DATABASE_READ_MAX_LAG": "0s"},
		{"DATABASE_READ_MAX_LAG": "soon"},
	}
	for _, env := range bad {
		if _, err := app.LoadConfig(func(k string) string { return env[k] }); err == nil {
			t.Errorf("LoadConfig accepted %v", env)
		}
	}
}

// Its tests mostly wait (on a started booking, the gateway, PostgreSQL): eight at once, not one per CPU.
func TestMain(m *testing.M) {
	testparallel.AtLeast(8)
	os.Exit(redistest.Run(m))
}

// TestEndToEnd starts booking and the edge on free ports and walks a fan's path through the edge: guest identity,
// catalog, seat map, hold, a rival's conflict with alternatives, the seat stream, cancel. It walks it twice: on a
// single Redis and on a Redis Cluster.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, r *redistest.Redis) {
		t.Parallel()
		testEndToEnd(t, r)
	})
}

func testEndToEnd(t *testing.T, r *redistest.Redis) {
	key, _ := token.GenerateKey()
	// One database for both, as deployed: the edge keeps the waiting room's record there, and booking's gate
	// reads it. The event stream is under the test's Redis prefix, so it goes with the test's keys.
	_, dbURL := pgtest.NewWithURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "EVENTS_STREAM": "{flashseat:events-test}:" + r.ID("events")}
	maps.Copy(env, r.Env())
	bookingURL := startBooking(t, env, token.NewStaticKeys(key.Public()))
	edgeURL := startEdge(t, bookingURL, dbURL, key, r.Env())
	c := client{t: t, base: edgeURL}
	show := seedShow(client{t: t, base: bookingURL}) // startBooking deletes its keys once booking has stopped

	var fan, rival struct{ UserID, Token string }
	if st := c.call("POST", "/api/v1/auth/guest", "", nil, &fan); st != 201 || fan.Token == "" {
		t.Fatalf("guest: %d", st)
	}
	c.call("POST", "/api/v1/auth/guest", "", nil, &rival)

	var cat struct {
		Events []struct {
			Shows []struct {
				ShowID         string
				AvailableSeats int
			}
		}
	}
	if st := c.call("GET", "/api/v1/events?city=Bangalore", "", nil, &cat); st != 200 {
		t.Fatalf("catalog: %d", st)
	}
	found := false
	for _, e := range cat.Events {
		for _, s := range e.Shows {
			found = found || (s.ShowID == show && s.AvailableSeats == 200)
		}
	}
	if !found {
		t.Fatalf("catalog lacks the show: %+v", cat)
	}

	// Watch the seat stream through the edge.
	events := make(chan string, 16)
	req, _ := http.NewRequest("GET", edgeURL+"/api/v1/shows/"+show+"/seats/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- line
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // let the subscription settle

	var seatMap struct {
		Seats []struct{ SeatID, Status string }
	}
	if st := c.call("GET", "/api/v1/shows/"+show+"/seats", "", nil, &seatMap); st != 200 || len(seatMap.Seats) != 200 {
		t.Fatalf("seat map: %d, %d seats", st, len(seatMap.Seats))
	}
	var held struct {
		BookingID string
		SeatIDs   []string
	}
	if st := c.call("POST", "/api/v1/bookings/hold", fan.Token, map[string]any{"showId": show, "seatIds": []string{"E10", "E11"}},
		&held, "Idempotency-Key", "e2e-1"); st != 201 {
		t.Fatalf("hold: %d", st)
	}
	var conflict struct {
		Type         string
		Unavailable  []string
		Alternatives []string
	}
	if st := c.call("POST", "/api/v1/bookings/hold", rival.Token, map[string]any{"showId": show, "seatIds": []string{"E11", "E12"}},
		&conflict); st != 409 || !strings.HasSuffix(conflict.Type, "/seats-unavailable") ||
		!slices.Equal(conflict.Unavailable, []string{"E11"}) || len(conflict.Alternatives) != 2 {
		t.Fatalf("conflict: %d %+v", st, conflict)
	}
	select {
	case ev := <-events:
		if !strings.Contains(ev, `"E10"`) || !strings.Contains(ev, "HELD") {
			t.Fatalf("first seat event %s", ev)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no seat event through the edge")
	}
	var cancelled struct {
		Status        string
		SeatsReleased []string
	}
	if st := c.call("DELETE", "/api/v1/bookings/"+held.BookingID, fan.Token, nil, &cancelled); st != 200 ||
		cancelled.Status != "CANCELLED" || len(cancelled.SeatsReleased) != 2 {
		t.Fatalf("cancel: %d %+v", st, cancelled)
	}
	if st := c.call("POST", "/api/v1/bookings/hold", rival.Token, map[string]any{"showId": show, "seatIds": []string{"E11", "E12"}}, nil); st != 201 {
		t.Fatalf("rival after cancel: %d", st)
	}
}

// startEdge runs the edge's Run in front of booking; env adds variables (the Redis to use).
func startEdge(t testing.TB, bookingURL, dbURL string, key token.Key, env map[string]string) string {
	t.Helper()
	vars := map[string]string{
		"DATABASE_URL":          dbURL,
		"EDGE_ADDR":             "127.0.0.1:0",
		"BOOKING_URL":           bookingURL,
		"AUTH_SECRET":           testSecret,
		"ADMISSION_SIGNING_KEY": token.EncodeSeed(key),
		"ADMISSION_KEY_ID":      key.ID,
		"ADMIN_TOKEN":           testAdmin,
	}
	maps.Copy(vars, env)
	cfg, err := edgeapp.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	return platformtest.Serve(t, "edge", func(ctx context.Context, ready func(string)) error {
		return edgeapp.Run(ctx, cfg, slog.New(slog.DiscardHandler), ready)
	})
}

// TestSeedDemoIdempotent: two replicas seeding at once, and again later, end with one demo venue and show.
func TestSeedDemoIdempotent(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	rdb := bookingtest.Redis(t)
	svc := booking.New(postgres.New(pool), redis.New(rdb), nil, booking.Config{})
	ctx := context.Background()
	ids := make([]string, 3)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := app.SeedDemo(ctx, pool, svc)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	id, err := app.SeedDemo(ctx, pool, svc)
	if err != nil {
		t.Fatal(err)
	}
	ids[2] = id
	t.Cleanup(func() { bookingtest.DeleteShowKeys(rdb, id) })
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("seeded shows %v", ids)
	}
	var venues, seats int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM venues`).Scan(&venues)
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM seats`).Scan(&seats)
	if venues != 1 || seats != 200 {
		t.Fatalf("%d venues, %d seats", venues, seats)
	}
	layout, err := svc.Layout(ctx, id)
	if err != nil || layout[0].Category != "SILVER" || layout[60].Category != "GOLD" || layout[199].Category != "PLATINUM" {
		t.Fatalf("layout: %v", err)
	}
}
