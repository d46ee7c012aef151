package http

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/edge"
)

// transports are the proxy's two ways upstream. Handle chooses between them by the request (mayStream); these
// tests choose, so that every case runs on each.
var transports = []struct {
	name   string
	handle func(*Proxy, *fiber.Ctx) error
}{
	{"fasthttp", (*Proxy).handleFast},
	{"net/http", (*Proxy).handleStream},
}

// startForwarding serves the edge's middleware and error table with every request sent upstream by handle.
func startForwarding(t *testing.T, upstream string, trusted string, handle func(*Proxy, *fiber.Ctx) error) string {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := edge.ParseTrustedProxies(trusted)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{
		Proxy: ProxyConfig{Target: target, DialTimeout: time.Second, HeaderTimeout: 300 * time.Millisecond,
			Timeout: 5 * time.Second, IdleConnTimeout: time.Minute, MaxIdleConns: 8},
		Trusted:  tp,
		Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.DiscardHandler),
	})
	s.App.All("/*", func(c *fiber.Ctx) error { return handle(s.proxy, c) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	return ln.Addr().String()
}

// exchangeRaw sends one request as written, on its own connection, and reads the answer.
func exchangeRaw(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// What the upstream is sent, and what the client is given back, is the same on either transport: hop-by-hop headers
// and those named in Connection never cross, X-Forwarded-* follow the trusted-proxy policy, the request id travels
// both ways.
func TestForwardHeaders(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		w.Header().Set("Connection", "X-Upstream-Private")
		w.Header().Set("X-Upstream-Private", "leak")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Request-Id", "upstream-id")
		w.Header().Set("X-Upstream", "yes")
		_ = json.NewEncoder(w).Encode(h)
	}))
	t.Cleanup(up.Close)
	upHost := strings.TrimPrefix(up.URL, "http://")

	const (
		absent     = "\x00absent"   // the header must not reach the upstream
		responseID = "\x00response" // the request id the client was given
	)
	for _, tc := range []struct {
		name    string
		trusted string   // TRUSTED_PROXIES; the test's client is 127.0.0.1
		lines   []string // header lines after Host: edge.example
		want    map[string]string
	}{{
		name: "hop-by-hop",
		lines: []string{"Connection: keep-alive, X-Client-Private", "X-Client-Private: secret", "Keep-Alive: timeout=9",
			"Proxy-Connection: keep-alive", "Proxy-Authorization: Basic eA==", "Te: trailers", "Upgrade: websocket",
			"X-Custom: kept", "Authorization: Bearer t", "Idempotency-Key: k1"},
		want: map[string]string{"Connection": absent, "X-Client-Private": absent, "Keep-Alive": absent,
			"Proxy-Connection": absent, "Proxy-Authorization": absent, "Te": absent, "Upgrade": absent,
			"X-Custom": "kept", "Authorization": "Bearer t", "Idempotency-Key": "k1", "Host": upHost,
			"X-Request-Id": responseID},
	}, {
		name: "an untrusted peer's forwarding headers are replaced",
		lines: []string{"X-Forwarded-For: 6.6.6.6", "X-Forwarded-Proto: https", "X-Forwarded-Host: evil.example",
			"Flashseat-Client-Addr: 6.6.6.6"},
		want: map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http",
			"X-Forwarded-Host": "edge.example", "Flashseat-Client-Addr": "127.0.0.1"},
	}, {
		name:    "a trusted proxy's forwarding headers are kept and extended",
		trusted: "127.0.0.1/32",
		lines: []string{"X-Forwarded-For: 198.51.100.7", "X-Forwarded-For: 203.0.113.9", "X-Forwarded-Proto: https",
			"X-Forwarded-Host: tickets.example"},
		want: map[string]string{"X-Forwarded-For": "198.51.100.7, 203.0.113.9, 127.0.0.1",
			"X-Forwarded-Proto": "https", "X-Forwarded-Host": "tickets.example",
			// The client as the edge decided it (behind a CDN: the address its trusted proxy names), for booking's
			// counts by address.
			"Flashseat-Client-Addr": "203.0.113.9"},
	}, {
		name:    "a trusted proxy that sets none",
		trusted: "127.0.0.1/32",
		want: map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http",
			"X-Forwarded-Host": "edge.example"},
	}, {
		name:  "the client's request id",
		lines: []string{"X-Request-Id: abc-123"},
		want:  map[string]string{"X-Request-Id": "abc-123"},
	}, {
		name:  "a malformed request id is replaced",
		lines: []string{"X-Request-Id: bad/id"},
		want:  map[string]string{"X-Request-Id": responseID},
	}} {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr.name, func(t *testing.T) {
				t.Parallel()
				addr := startForwarding(t, up.URL, tc.trusted, tr.handle)
				raw := "GET /api/v1/x HTTP/1.1\r\nHost: edge.example\r\n"
				for _, l := range tc.lines {
					raw += l + "\r\n"
				}
				resp, body := exchangeRaw(t, addr, raw+"\r\n")
				var got http.Header
				if err := json.Unmarshal([]byte(body), &got); resp.StatusCode != http.StatusOK || err != nil {
					t.Fatalf("status %d, %q: %v", resp.StatusCode, body, err)
				}
				id := resp.Header.Get(HeaderRequestID)
				for name, want := range tc.want {
					switch want {
					case absent:
						if v, ok := got[http.CanonicalHeaderKey(name)]; ok {
							t.Errorf("upstream got %s: %q, want none", name, v)
						}
						continue
					case responseID:
						want = id
					}
					if v := strings.Join(got.Values(name), ", "); v != want {
						t.Errorf("upstream got %s: %q, want %q", name, v, want)
					}
				}
				// The answer crosses back under the same rules.
				if v := resp.Header.Values(HeaderRequestID); len(v) != 1 || v[0] != id || id == "upstream-id" {
					t.Errorf("answer's request ids %q, want one, the edge's", v)
				}
				for _, name := range []string{"X-Upstream-Private", "Keep-Alive"} {
					if v := resp.Header.Get(name); v != "" {
						t.Errorf("answer has %s: %q", name, v)
					}
				}
				if resp.Header.Get("X-Upstream") != "yes" {
					t.Errorf("answer lacks X-Upstream: %v", resp.Header)
				}
			})
		}
	}
}

// A request whose connection breaks after it was written is sent once more only when edge.Replayable says so,
// on either transport; a timeout is never replayed (504), and a refusal is a 502.
func TestForwardReplay(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	bodies := map[string][]string{}
	stall := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("X-Case")
		mu.Lock()
		hits[key]++
		n := hits[key]
		bodies[key] = append(bodies[key], string(body))
		mu.Unlock()
		if n == 1 {
			if r.Header.Get("X-Fail") == "stall" {
				<-stall
				return
			}
			conn, _, _ := w.(http.Hijacker).Hijack() // read whole, then the connection breaks: no answer
			conn.Close()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(stall) }) // before up.Close, which waits for the stalled handler

	for _, tc := range []struct {
		name, method, body string
		lines              []string
		wantStatus         int
		wantHits           int
	}{
		{"GET", "GET", "", nil, 200, 2},
		{"HEAD", "HEAD", "", nil, 200, 2},
		{"OPTIONS", "OPTIONS", "", nil, 200, 2},
		{"PUT with a body", "PUT", `{"email":"a@example.com"}`, nil, 200, 2},
		{"DELETE", "DELETE", "", nil, 200, 2},
		{"POST", "POST", `{"seatIds":["A1"]}`, nil, 502, 1},
		{"POST without a body", "POST", "", nil, 502, 1},
		{"PATCH", "PATCH", `{}`, nil, 502, 1},
		{"POST with an Idempotency-Key", "POST", `{"seatIds":["A1"]}`, []string{"Idempotency-Key: k1"}, 200, 2},
		{"POST with X-Idempotency-Key, which booking does not read", "POST", `{}`, []string{"X-Idempotency-Key: k1"}, 502, 1},
		{"GET that times out", "GET", "", []string{"X-Fail: stall"}, 504, 1},
	} {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr.name, func(t *testing.T) {
				t.Parallel()
				key := tc.name + "/" + tr.name
				addr := startForwarding(t, up.URL, "", tr.handle)
				raw := tc.method + " /api/v1/x HTTP/1.1\r\nHost: edge.example\r\nX-Case: " + key + "\r\n"
				for _, l := range tc.lines {
					raw += l + "\r\n"
				}
				if tc.body != "" {
					raw += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(tc.body)) + "\r\n"
				}
				resp, _ := exchangeRaw(t, addr, raw+"\r\n"+tc.body)
				mu.Lock()
				n, sent := hits[key], bodies[key]
				mu.Unlock()
				if resp.StatusCode != tc.wantStatus || n != tc.wantHits {
					t.Fatalf("status %d after %d upstream hits, want %d after %d", resp.StatusCode, n, tc.wantStatus,
						tc.wantHits)
				}
				for i, b := range sent {
					if b != tc.body {
						t.Errorf("attempt %d sent body %q, want %q", i+1, b, tc.body)
					}
				}
			})
		}
	}
}
