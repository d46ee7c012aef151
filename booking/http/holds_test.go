package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"slices"
	"strings"
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

// TestHoldHeadersAnyCase: the hold path reads its headers by their canonical names (fasthttp normalises the case
// of request header names as it parses them), so a client sending them in lower case is served exactly as one
// sending them as the API documents: authenticated, its request id echoed, its Idempotency-Key honoured, and a
// refusal still the full problem.
func TestHoldHeadersAnyCase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	send := func(user, body string, headers map[string]string) response {
		t.Helper()
		req, err := nethttp.NewRequest("POST", h.base+"/api/v1/bookings/hold", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header["content-type"] = []string{"application/json"} // set as given, not canonicalised by net/http
		req.Header["authorization"] = []string{"Bearer " + h.user(user)}
		for k, v := range headers {
			req.Header[k] = []string{v}
		}
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: b}
	}
	first := send("fan", holdBody(show, "F3", "F4"), map[string]string{"x-request-id": "req-lower-1",
		"idempotency-key": "lower-k", "accept-language": "HI-in,en;q=0.5"})
	if first.status != 201 || first.header.Get("X-Request-Id") != "req-lower-1" {
		t.Fatalf("hold: %d %v %s", first.status, first.header, first.body)
	}
	var held struct{ BookingID string }
	first.json(t, &held)
	again := send("fan", holdBody(show, "F3", "F4"), map[string]string{"IDEMPOTENCY-KEY": "lower-k"})
	if again.status != 201 || string(again.body) != string(first.body) {
		t.Fatalf("replay: %d %s, want %s", again.status, again.body, first.body)
	}
	if lang, err := h.env.Store.BookingLanguage(context.Background(), held.BookingID); err != nil || lang != "hi" {
		t.Fatalf("booking %s: language %q, %v; want hi", held.BookingID, lang, err)
	}
	refused := send("rival", holdBody(show, "F4", "F5"), map[string]string{"x-request-id": "req-lower-2"})
	p := problemOf(t, refused)
	if refused.status != 409 || refused.header.Get("X-Request-Id") != "req-lower-2" ||
		refused.header.Get("Cache-Control") != "no-store" || !slices.Equal(anyStrings(p.Extensions["unavailable"]), []string{"F4"}) {
		t.Fatalf("refusal: %d %v %s", refused.status, refused.header, refused.body)
	}
	if alts := anyStrings(p.Extensions["alternatives"]); len(alts) != 2 {
		t.Fatalf("alternatives = %v", p.Extensions["alternatives"])
	}
	// Without the bearer, whatever its case, the answer is 401.
	req, _ := nethttp.NewRequest("POST", h.base+"/api/v1/bookings/hold", strings.NewReader(holdBody(show, "F9")))
	req.Header["authorisation"] = []string{"Bearer " + h.user("fan")}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("no bearer: %d", resp.StatusCode)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
