package app

import (
	"net/http"
	"strconv"
	"testing"
)

func TestRateLimitPerAddress(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "RATE_EXEMPT": "none",
		"RATE_PER_IP": "1", "RATE_PER_IP_BURST": "3"})
	for i := 0; i < 3; i++ {
		if resp, body := do(t, "GET", edge+"/api/v1/events", "", nil); resp.StatusCode != 201 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := do(t, "GET", edge+"/api/v1/events", "", nil)
	wantProblem(t, resp, body, http.StatusTooManyRequests, "rate-limited")
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	// The peer is not a trusted proxy: inventing X-Forwarded-For addresses does not escape the limit.
	resp, _ = do(t, "GET", edge+"/api/v1/events", "", map[string]string{"X-Forwarded-For": "198.51.100.1"})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("spoofed X-Forwarded-For escaped the limit: %d", resp.StatusCode)
	}
	// Operations endpoints are never limited.
	if resp, _ := do(t, "GET", edge+"/healthz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
}

func TestRateLimitBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "RATE_EXEMPT": "none",
		"TRUSTED_PROXIES": "127.0.0.0/8", "RATE_PER_IP": "1", "RATE_PER_IP_BURST": "2"})
	get := func(client string) int {
		resp, _ := do(t, "GET", edge+"/api/v1/events", "", map[string]string{"X-Forwarded-For": client})
		return resp.StatusCode
	}
	for i := 0; i < 2; i++ {
		if s := get("198.51.100.1"); s != 201 {
			t.Fatalf("client A request %d: %d", i, s)
		}
	}
	if s := get("198.51.100.1"); s != 429 {
		t.Fatalf("client A over its limit: %d", s)
	}
	// Behind the CDN, each client has its own bucket.
	if s := get("198.51.100.2"); s != 201 {
		t.Fatalf("client B limited by A's bucket: %d", s)
	}
}

func TestRateLimitPerUserAndClasses(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL,
		"RATE_PER_USER": "1", "RATE_PER_USER_BURST": "2",
		"RATE_QUEUE_PER_USER": "100", "RATE_QUEUE_PER_USER_BURST": "50"})
	u1, u2 := userToken(t, "u1"), userToken(t, "u2")
	get := func(path, tok string) int {
		resp, _ := do(t, "GET", edge+path, "", map[string]string{"Authorization": "Bearer " + tok})
		return resp.StatusCode
	}
	for i := 0; i < 2; i++ {
		if s := get("/api/v1/bookings/b1", u1); s != 201 {
			t.Fatalf("u1 request %d: %d", i, s)
		}
	}
	if s := get("/api/v1/bookings/b1", u1); s != 429 {
		t.Fatalf("u1 over its limit: %d", s)
	}
	if s := get("/api/v1/bookings/b1", u2); s != 201 {
		t.Fatalf("u2 limited by u1: %d", s)
	}
	// The waiting room has its own, gentler limit: u1's API exhaustion does not turn it away there (the
	// waiting room itself answers; any status but 429 means the edge let it through).
	for i := 0; i < 20; i++ {
		if s := get("/queue/s1/status", u1); s == 429 {
			t.Fatalf("queue request %d: %d", i, s)
		}
	}
}
