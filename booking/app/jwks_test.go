package app_test

import (
	"maps"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/token"
)

// Booking up before the edge, as a cold start may have it: an admitted fan's hold is refused with 503 while the
// edge's keys cannot be fetched, and answered within about a second of the edge coming up: until booking has a
// set, it tries the JWKS again within a second of each failure, rather than minInterval (5 s) later.
func TestBookingBeforeEdge(t *testing.T) {
	t.Parallel()
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	r := redistest.New(t)
	_, dbURL := pgtest.NewWithURL(t) // one database for both, as deployed
	edgeAddr := storetest.FreeAddr(t)
	env := map[string]string{"DATABASE_URL": dbURL, "EVENTS_STREAM": testEventStream(t)}
	maps.Copy(env, r.Env())
	benv := maps.Clone(env)
	benv["ADMISSION_JWKS_URL"] = "http://" + edgeAddr + "/.well-known/jwks.json"
	bookingURL := startBooking(t, benv, nil)
	b := client{t: t, base: bookingURL}
	show := seedShow(b)
	admissiontest.SetSettings(t, r.Client, show, admission.Settings{Enabled: true,
		AdmitPerSecond: 100, MaxActive: 1000, TokenTTLSeconds: 600})
	var fan struct{ UserID, Token string }
	if st := b.call("POST", "/api/v1/auth/guest", "", nil, &fan); st != 201 {
		t.Fatalf("guest: %d", st)
	}
	admitted, _, err := token.NewIssuer(key).Issue(fan.UserID, show, "jti-before-edge", time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hold := func(c client) int {
		return c.call("POST", "/api/v1/bookings/hold", fan.Token, map[string]any{"showId": show, "seatIds": []string{"E10"}},
			nil, "X-Admission-Token", admitted)
	}
	if st := hold(b); st != 503 {
		t.Fatalf("hold with the edge not up: %d, want 503", st)
	}
	time.Sleep(1500 * time.Millisecond) // booking's tries are a second apart by now: the worst case below

	env["EDGE_ADDR"] = edgeAddr
	edge := client{t: t, base: startEdge(t, bookingURL, dbURL, key, env)}
	up := time.Now()
	for {
		st := hold(edge)
		if st == 201 {
			break
		}
		// About a second: the next try, and the hold. Two allow for -race on two busy cores.
		if st != 503 || time.Since(up) > 2*time.Second {
			t.Fatalf("hold %v after the edge came up: %d, want 201", time.Since(up), st)
		}
		time.Sleep(100 * time.Millisecond) // within the edge's per-user rate (10/s, burst 30)
	}
	t.Logf("held %v after the edge came up", time.Since(up))
}
