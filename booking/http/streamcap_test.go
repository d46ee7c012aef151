package http_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
)

// TestSeatStreamCaps: one identity holds at most 8 seat-map streams open, and one address prefix at most its
// cap (set low here); the stream over either is a 429 problem with Retry-After, and a closed stream frees its
// place once the server finds it closed (its next write: a heartbeat at most).
func TestSeatStreamCaps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newEnv(t), func(c *bookinghttp.Config) {
		c.SeatStreams.PerPrefix = 12
		c.Heartbeat = 100 * time.Millisecond // a closed stream is found closed at its next write
	})
	path := h.base + "/api/v1/shows/" + h.env.Show.ID + "/seats/stream"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(auth, addr string) (*http.Response, func()) {
		t.Helper()
		sctx, stop := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(sctx, "GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		// Behind a CDN: the edge's entry in X-Forwarded-For is the CDN's (the last), and the client's address as
		// the edge decided it comes in its own header, which is what the streams are counted by.
		req.Header.Set("X-Forwarded-For", addr+", 198.51.100.1")
		req.Header.Set(admission.ClientHeader, addr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, func() { stop(); resp.Body.Close() }
	}
	refused := func(resp *http.Response) {
		t.Helper()
		if resp.StatusCode != 429 {
			t.Fatalf("got %d, want 429 (a stream's body never ends: not read)", resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body)
		var p problem.Problem
		if resp.StatusCode != 429 || resp.Header.Get("Content-Type") != problem.ContentType ||
			resp.Header.Get("Retry-After") == "" || json.Unmarshal(b, &p) != nil || p.Type != problem.TypeBase+problem.RateLimited {
			t.Fatalf("got %d %s Retry-After %q %s, want a 429 rate-limited problem with Retry-After",
				resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), b)
		}
	}

	// One address without a token: 8 streams, then refused.
	var closers []func()
	for i := range 8 {
		resp, stop := open("", "203.0.113.7")
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		closers = append(closers, stop)
	}
	resp, stop := open("", "203.0.113.7")
	refused(resp)
	stop()
	// One fan's token, from another address: its own 8.
	fan := h.user("streamer")
	for i := range 8 {
		resp, stop := open(fan, "192.0.2.1")
		if resp.StatusCode != 200 {
			t.Fatalf("fan's stream %d: %d", i, resp.StatusCode)
		}
		closers = append(closers, stop)
	}
	resp, stop = open(fan, "192.0.2.1")
	refused(resp)
	stop()
	// Other fans of 203.0.113.7's prefix: the prefix's cap of 12 holds whoever asks (8 are open already).
	for i := range 4 {
		resp, stop := open(h.user("neighbour"+string(rune('a'+i))), "203.0.113.7")
		if resp.StatusCode != 200 {
			t.Fatalf("neighbour %d: %d", i, resp.StatusCode)
		}
		closers = append(closers, stop)
	}
	resp, stop = open(h.user("neighbour-z"), "203.0.113.7")
	refused(resp)
	stop()
	// Closing one of the address's streams frees a place.
	closers[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, stop := open("", "203.0.113.7")
		if resp.StatusCode == 200 {
			stop()
			break
		}
		stop()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place never came back: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range closers[1:] {
		c()
	}
}
