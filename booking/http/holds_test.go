package http_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/booking"
)

// BenchmarkHoldRefused is the CPU one refused hold costs booking, from the parsed HTTP request to the written
// 409, with no network in between: in a flash crowd nearly every request is one, so this cost sets how many
// fans a replica turns away per second and so its latency under load (BenchmarkHotShow in booking/app measures
// that end to end).
//
//	go test -run '^$' -bench HoldRefused -benchmem ./booking/http/
func BenchmarkHoldRefused(b *testing.B) {
	h := newHarness(b, newEnv(b))
	show := h.env.Show.ID
	// Row E is held, two seats a fan, and every benchmarked request asks for two of its seats.
	for n := 1; n <= 20; n += 2 {
		r := h.do("POST", "/api/v1/bookings/hold", h.user(fmt.Sprintf("holder-%d", n)),
			holdBody(show, booking.SeatID("E", n), booking.SeatID("E", n+1)))
		if r.status != 201 {
			b.Fatalf("hold: %d %s", r.status, r.body)
		}
	}
	tok := "Bearer " + h.user("fan")
	bodies := make([][]byte, 19)
	for i := range bodies {
		bodies[i] = []byte(holdBody(show, booking.SeatID("E", i+1), booking.SeatID("E", i+2)))
	}
	handler := h.srv.App().Handler()
	var ctx fasthttp.RequestCtx
	do := func(i int) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/api/v1/bookings/hold")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set("Authorization", tok)
		ctx.Request.SetBody(bodies[i%len(bodies)])
		handler(&ctx)
	}
	do(0) // loads the show's snapshot
	if ctx.Response.StatusCode() != 409 {
		b.Fatalf("warm-up: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		do(i)
		if ctx.Response.StatusCode() != 409 {
			b.Fatalf("got %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// TestConcurrentRefusalsOwnBodies: refusals are written from pooled buffers; each response must carry its own
// request's seats however many are written at once (under -race this also catches a buffer reused too early).
func TestConcurrentRefusalsOwnBodies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	for n := 1; n <= 20; n += 2 {
		if r := h.do("POST", "/api/v1/bookings/hold", h.user(fmt.Sprintf("holder-%d", n)),
			holdBody(show, booking.SeatID("E", n), booking.SeatID("E", n+1))); r.status != 201 {
			t.Fatalf("hold: %d %s", r.status, r.body)
		}
	}
	tok := h.user("fan")
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := h.with(t)
			for i := range 25 {
				n := 1 + (g+i)%19
				want := []string{booking.SeatID("E", n), booking.SeatID("E", n+1)}
				r := h.do("POST", "/api/v1/bookings/hold", tok, holdBody(show, want...))
				var p struct{ Unavailable []string }
				if err := json.Unmarshal(r.body, &p); err != nil || r.status != 409 || !slices.Equal(p.Unavailable, want) {
					t.Errorf("asked %v: %d %s", want, r.status, r.body)
					return
				}
			}
		}()
	}
	wg.Wait()
}
