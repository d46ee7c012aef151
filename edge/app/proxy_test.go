package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// echo is an upstream that answers with what it received.
type echoed struct {
	Method string      `json:"method"`
	URI    string      `json:"uri"`
	Host   string      `json:"host"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

func echoUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "X-Upstream-Private")
		w.Header().Set("X-Upstream-Private", "leak")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Add("Set-Cookie", "a=1; Path=/")
		w.Header().Add("Set-Cookie", "b=2; Path=/")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(echoed{r.Method, r.RequestURI, r.Host, r.Header, string(b)})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestForwarding(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	edge, ops := startEdgeOps(t, map[string]string{"BOOKING_URL": up.URL})
	// Both of the proxy's paths keep the same header hygiene: ordinary requests go by fasthttp's client, those
	// that may be answered with an event stream by net/http's Transport.
	for _, path := range []struct{ name, accept string }{{"fast", "application/json"}, {"transport", "text/event-stream"}} {
		t.Run(path.name, func(t *testing.T) { testForwardingHeaders(t, up, edge, path.accept) })
	}

	resp, body := do(t, "GET", ops+"/metrics", "", nil)
	for _, series := range []string{`edge_requests_total{class="api",code="201",method="POST"}`,
		"edge_request_duration_seconds_bucket", "go_goroutines", `edge_ratelimit_keys{class="api",key="ip"}`} {
		if resp.StatusCode != 200 || !strings.Contains(string(body), series) {
			t.Errorf("/metrics lacks %s (status %d)", series, resp.StatusCode)
		}
	}
	// The public port does not serve them: /metrics goes to the upstream like any other path.
	if _, public := do(t, "GET", edge+"/metrics", "", nil); strings.Contains(string(public), "go_goroutines") {
		t.Error("the public port serves the metrics")
	}
	if resp, _ := do(t, "GET", ops+"/debug/pprof/", "", nil); resp.StatusCode != 200 {
		t.Errorf("pprof on the operations port: %d", resp.StatusCode)
	}
}

func testForwardingHeaders(t *testing.T, up *httptest.Server, edge, accept string) {
	resp, body := do(t, "POST", edge+"/api/v1/some/Path%2Fx?b=2&a=1", `{"k":"v"}`, map[string]string{
		"Accept":           accept,
		"Content-Type":     "application/json",
		"Connection":       "X-Client-Private",
		"X-Client-Private": "secret",
		"X-Forwarded-For":  "6.6.6.6",
		"X-Custom":         "kept",
		"Idempotency-Key":  "k1",
		"Keep-Alive":       "timeout=9",
		"Te":               "trailers",
	})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d, body %s", resp.StatusCode, body)
	}
	var got echoed
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if got.Method != "POST" || got.URI != "/api/v1/some/Path%2Fx?b=2&a=1" || got.Body != `{"k":"v"}` {
		t.Fatalf("forwarded %s %s %q", got.Method, got.URI, got.Body)
	}
	h := got.Header
	checks := []struct{ name, got, want string }{
		{"X-Custom", h.Get("X-Custom"), "kept"},
		{"Idempotency-Key", h.Get("Idempotency-Key"), "k1"},
		{"X-Client-Private (named by Connection)", h.Get("X-Client-Private"), ""},
		{"Connection", h.Get("Connection"), ""},
		{"Keep-Alive", h.Get("Keep-Alive"), ""},
		{"Te", h.Get("Te"), ""},
		{"Accept", h.Get("Accept"), accept},
		{"Content-Type", h.Get("Content-Type"), "application/json"},
		// The peer is not a trusted proxy, so its X-Forwarded-For claim is replaced, not extended.
		{"X-Forwarded-For", h.Get("X-Forwarded-For"), "127.0.0.1"},
		{"X-Forwarded-Proto", h.Get("X-Forwarded-Proto"), "http"},
		{"X-Forwarded-Host", h.Get("X-Forwarded-Host"), strings.TrimPrefix(edge, "http://")},
		{"upstream Host", got.Host, strings.TrimPrefix(up.URL, "http://")},
		{"request id to upstream", h.Get("X-Request-Id"), resp.Header.Get("X-Request-Id")},
		{"response X-Upstream", resp.Header.Get("X-Upstream"), "yes"},
		{"response X-Upstream-Private (named by Connection)", resp.Header.Get("X-Upstream-Private"), ""},
		{"response Keep-Alive", resp.Header.Get("Keep-Alive"), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("no request id generated")
	}
	if n := len(resp.Header.Values("X-Request-Id")); n != 1 {
		t.Errorf("%d X-Request-Id headers, want 1", n)
	}
	if n := len(resp.Header.Values("Set-Cookie")); n != 2 {
		t.Errorf("%d Set-Cookie headers, want 2", n)
	}

	// A client's own request id is kept; a malformed one is replaced.
	resp, body = do(t, "GET", edge+"/x", "", map[string]string{"X-Request-Id": "abc-123", "Accept": accept})
	json.Unmarshal(body, &got)
	if resp.Header.Get("X-Request-Id") != "abc-123" || got.Header.Get("X-Request-Id") != "abc-123" {
		t.Errorf("request id not kept: %q / %q", resp.Header.Get("X-Request-Id"), got.Header.Get("X-Request-Id"))
	}
	resp, _ = do(t, "GET", edge+"/x", "", map[string]string{"X-Request-Id": "bad id\twith junk"})
	if id := resp.Header.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
		t.Errorf("malformed request id kept: %q", id)
	}
}

func TestTrustedProxyForwardingHeaders(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "TRUSTED_PROXIES": "127.0.0.1/32"})
	_, body := do(t, "GET", edge+"/x", "", map[string]string{
		"X-Forwarded-For": "198.51.100.7", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "tickets.example",
	})
	var got echoed
	json.Unmarshal(body, &got)
	if v := got.Header.Get("X-Forwarded-For"); v != "198.51.100.7, 127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q", v)
	}
	if got.Header.Get("X-Forwarded-Proto") != "https" || got.Header.Get("X-Forwarded-Host") != "tickets.example" {
		t.Errorf("trusted proxy's proto/host not kept: %v", got.Header)
	}
}

func TestUpstreamDown(t *testing.T) {
	t.Parallel()
	dead := storetest.DeadAddr(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": "http://" + dead})
	for _, path := range proxyPaths {
		resp, body := do(t, "GET", edge+"/api/v1/events", "", map[string]string{"Accept": path.accept})
		wantProblem(t, resp, body, http.StatusBadGateway, "bad-gateway")
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: error answer without request id", path.name)
		}
	}
	resp, body := do(t, "GET", edge+"/readyz", "", nil)
	wantProblem(t, resp, body, http.StatusServiceUnavailable, "service-unavailable")
}

func TestUpstreamTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "UPSTREAM_HEADER_TIMEOUT": "200ms",
		"UPSTREAM_TIMEOUT": "300ms"})
	for _, path := range proxyPaths {
		start := time.Now()
		resp, body := do(t, "GET", edge+"/slow", "", map[string]string{"Accept": path.accept})
		wantProblem(t, resp, body, http.StatusGatewayTimeout, "gateway-timeout")
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: 504 after %v", path.name, d)
		}
	}
}

// proxyPaths are the proxy's two ways upstream, chosen by the request: ordinary requests go by fasthttp's client,
// those that may be answered with an event stream by net/http's Transport.
var proxyPaths = []struct{ name, accept string }{{"fast", "application/json"}, {"transport", "text/event-stream"}}

// A replayable request that meets a broken connection is sent once more; a POST is not (TestNoRetryOfPost), unless
// it carries an Idempotency-Key.
func TestReplayOnBrokenConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		hdr          map[string]string
		wantStatus   int
		wantHits     int64
	}{
		{"GET", "GET", nil, http.StatusOK, 2},
		{"POST with Idempotency-Key", "POST", map[string]string{"Idempotency-Key": "k1"}, http.StatusOK, 2},
		{"POST", "POST", nil, http.StatusBadGateway, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hits counter
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.inc()
				if hits.get() == 1 {
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
					return
				}
				w.Write([]byte("ok"))
			}))
			defer up.Close()
			edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})
			resp, body := do(t, tc.method, edge+"/api/v1/things", "x", tc.hdr)
			if resp.StatusCode != tc.wantStatus || hits.get() != tc.wantHits {
				t.Fatalf("status %d after %d upstream hits (%s), want %d after %d",
					resp.StatusCode, hits.get(), body, tc.wantStatus, tc.wantHits)
			}
		})
	}
}

// The fast path buffers a whole answer: a large one passes intact, with its length.
func TestLargeAnswer(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("h", 8<<10))
		w.Write([]byte(big))
	}))
	defer up.Close()
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})
	resp, body := do(t, "GET", edge+"/api/v1/big", "", nil)
	if resp.StatusCode != http.StatusOK || string(body) != big || resp.ContentLength != int64(len(big)) ||
		len(resp.Header.Get("X-Big")) != 8<<10 {
		t.Fatalf("status %d, %d bytes (length %d), want 200 and %d", resp.StatusCode, len(body), resp.ContentLength,
			len(big))
	}
	resp, body = do(t, "HEAD", edge+"/api/v1/big", "", nil)
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD: status %d, %d bytes", resp.StatusCode, len(body))
	}
}

// A POST whose connection breaks is answered 502 and never sent twice: the upstream may have acted on it.
func TestNoRetryOfPost(t *testing.T) {
	t.Parallel()
	var hits counter
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.inc()
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
	}))
	defer up.Close()
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})
	resp, body := do(t, "POST", edge+"/api/v1/bookings/b1/pay", `{"paymentMethod":"pm_card_ok"}`, nil)
	wantProblem(t, resp, body, http.StatusBadGateway, "bad-gateway")
	if n := hits.get(); n != 1 {
		t.Fatalf("upstream saw the POST %d times, want 1", n)
	}
}

// sseUpstream sends one event at once, then one every interval until the client goes away, which it reports.
func sseUpstream(t *testing.T, interval time.Duration, gone chan<- struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		f := w.(http.Flusher)
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "event: seat\ndata: {\"seatId\":\"A%d\",\"status\":\"HELD\"}\n\n", i); err != nil {
				break
			}
			f.Flush()
			select {
			case <-r.Context().Done():
				gone <- struct{}{}
				return
			case <-time.After(interval):
			}
		}
		gone <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEventStreamIsNotBuffered: the upstream writes each event only once the client has read the one before, so
// a proxy that held back any part of a stream would stall it for good; no clock decides, however loaded the
// machine.
func TestEventStreamIsNotBuffered(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{}, 1)
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { gone <- struct{}{} }()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "event: seat\ndata: {\"seatId\":\"A%d\",\"status\":\"HELD\"}\n\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-next:
			}
		}
	}))
	t.Cleanup(up.Close)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", edge+"/api/v1/shows/s1/seats/stream", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string)
	go func() {
		defer close(events)
		br := bufio.NewReader(resp.Body)
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\n" {
				events <- ev.String()
				ev.Reset()
				continue
			}
			ev.WriteString(line)
		}
	}()
	for i := 0; i <= 5; i++ {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("stream ended before event %d", i)
			}
			if !strings.Contains(ev, fmt.Sprintf(`"seatId":"A%d"`, i)) {
				t.Fatalf("event %d = %q", i, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d never reached the client: the edge holds the stream back", i)
		}
		if i < 5 {
			next <- struct{}{} // only now does the upstream write the next one
		}
	}
	// The fan goes away: the edge, finding so at its next write, must close the upstream stream, which keeps
	// writing meanwhile.
	cancel()
	for deadline := time.After(3 * time.Second); ; {
		select {
		case <-gone:
			return
		case next <- struct{}{}:
			time.Sleep(20 * time.Millisecond)
		case <-deadline:
			t.Fatal("upstream stream still open 3s after the client left")
		}
	}
}

// A silent stream gets heartbeat comments from the edge, which also find a client that left.
func TestEventStreamHeartbeat(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{}, 1)
	up := sseUpstream(t, time.Hour, gone)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "STREAM_HEARTBEAT": "100ms"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", edge+"/api/v1/shows/s1/seats/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	var comments int
	deadline := time.Now().Add(2 * time.Second)
	for comments < 2 && time.Now().Before(deadline) {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ":\n" {
			comments++
		}
	}
	if comments < 2 {
		t.Fatalf("%d heartbeats", comments)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("silent upstream stream still open after the client left")
	}
}

// A POST sent after the upstream closed its idle pooled connection (an idle timeout, a restart) reaches the
// upstream once and is answered, not refused with 502: the edge finds the connection closed before writing on it.
func TestPostAfterUpstreamClosedIdleConnections(t *testing.T) {
	t.Parallel()
	var hits counter
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.inc()
		w.Write([]byte("ok"))
	}))
	defer up.Close()
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})
	for i := 1; i <= 3; i++ {
		resp, body := do(t, "POST", edge+"/api/v1/bookings/hold", `{"showId":"s1"}`, nil)
		if resp.StatusCode != http.StatusOK || hits.get() != int64(i) {
			t.Fatalf("POST %d: status %d (%s) after %d upstream hits", i, resp.StatusCode, body, hits.get())
		}
		up.CloseClientConnections()
		time.Sleep(1100 * time.Millisecond) // idle long enough to be checked (staleCheckAfter)
	}
}

// An idle connection that is still open is kept, even after its last read deadline passed.
func TestIdleConnectionReused(t *testing.T) {
	t.Parallel()
	var conns counter
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.inc()
		}
	}
	up.Start()
	defer up.Close()
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "UPSTREAM_HEADER_TIMEOUT": "200ms",
		"UPSTREAM_TIMEOUT": "300ms"})
	for i := 0; i < 2; i++ {
		if resp, body := do(t, "POST", edge+"/api/v1/x", "x", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d (%s)", resp.StatusCode, body)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	if n := conns.get(); n != 1 {
		t.Fatalf("%d upstream connections, want 1", n)
	}
}
