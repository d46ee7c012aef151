package app

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/problem"
)

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// On cancellation Run stops accepting, lets an in-flight request finish, and returns nil.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "done")
	}))
	defer up.Close()
	_, dbURL := pgtest.NewWithURL(t)
	cfg, err := LoadConfig(func(k string) string {
		return map[string]string{"EDGE_ADDR": "127.0.0.1:0", "BOOKING_URL": up.URL, "SHUTDOWN_TIMEOUT": "5s",
			"ADMISSION_SIGNING_KEY": testSeed, "AUTH_SECRET": testSecret, "DATABASE_URL": dbURL}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a string) { addr <- a })
	}()
	base := "http://" + <-addr

	type result struct {
		status int
		body   string
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			res <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{status: resp.StatusCode, body: string(b)}
	}()
	<-entered
	cancel()
	r := <-res
	if r.err != nil || r.status != 200 || r.body != "done" {
		t.Fatalf("in-flight request: %+v", r)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("Run did not return")
	}
	if _, err := http.Get(base + "/x"); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// Shutdown ends proxied event streams at once instead of waiting for the drain deadline.
// TestStopAtOnce: a stop that comes as the edge starts listening (the ready callback itself cancels) still ends
// Run within the drain deadline. fasthttp closes only the listeners its Serve has registered, and the Serve
// goroutine may not have run yet: the edge then returned from its drain at once and waited forever for Serve,
// which went on accepting.
func TestStopAtOnce(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewWithURL(t)
	cfg, err := LoadConfig(func(k string) string {
		return map[string]string{"EDGE_ADDR": "127.0.0.1:0", "BOOKING_URL": "http://127.0.0.1:1", "SHUTDOWN_TIMEOUT": "2s",
			"ADMISSION_SIGNING_KEY": testSeed, "AUTH_SECRET": testSecret, "DATABASE_URL": dbURL}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler), func(string) { cancel() }) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("start %d: Run returned %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("start %d: the edge did not stop", i)
		}
		cancel()
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{}, 1)
	up := sseUpstream(t, time.Hour, gone)
	_, dbURL := pgtest.NewWithURL(t)
	cfg, err := LoadConfig(func(k string) string {
		return map[string]string{"EDGE_ADDR": "127.0.0.1:0", "BOOKING_URL": up.URL, "SHUTDOWN_TIMEOUT": "8s",
			"ADMISSION_SIGNING_KEY": testSeed, "AUTH_SECRET": testSecret, "DATABASE_URL": dbURL}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a string) { addr <- a })
	}()
	resp, err := http.Get("http://" + <-addr + "/api/v1/shows/s1/seats/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("an open stream held the shutdown")
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Fatalf("shutdown took %v with a stream open", d)
	}
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("upstream stream left open after shutdown")
	}
}

// Without Redis the edge is not ready and the gate refuses to guess: every route that needs Redis (the gate,
// the waiting room) answers 503 store-unavailable with Retry-After, never a 500, while unprotected routes still
// work. The same holds when REDIS_URL names a server that answers in another protocol (here HTTP: a wrong service,
// or a port a dead Redis left to another server); that once made the waiting room's routes answer 500.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	notRedis := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(notRedis.Close)
	for name, addr := range map[string]string{
		"nothing listens":  storetest.DeadAddr(t),
		"another protocol": strings.TrimPrefix(notRedis.URL, "http://"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			redisDown(t, addr)
		})
	}
}

func redisDown(t *testing.T, redisAddr string) {
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "REDIS_URL": "redis://" + redisAddr + "/0"})
	resp, body := do(t, "GET", edge+"/readyz", "", nil)
	p := wantProblem(t, resp, body, http.StatusServiceUnavailable, problem.StoreUnavailable)
	if checks, _ := p.Extensions["checks"].(map[string]any); checks["redis"] != "unavailable" {
		t.Fatalf("readyz checks %v, want redis unavailable", p.Extensions["checks"])
	}
	auth := map[string]string{"Authorization": "Bearer " + userToken(t, "u1")}
	for _, r := range []struct {
		method, path, body string
		hdr                map[string]string
	}{
		{"GET", "/api/v1/shows/s1/seats", "", nil},
		{"POST", "/api/v1/bookings/hold", `{"showId":"s1","seatIds":["A1"]}`, auth},
		{"POST", "/queue/s1/join", "", auth},
		{"GET", "/queue/s1/status", "", auth},
		{"GET", "/queue/s1/events", "", auth},
	} {
		resp, body := do(t, r.method, edge+r.path, r.body, r.hdr)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s %s: %d %s", r.method, r.path, resp.StatusCode, body)
			continue
		}
		wantProblem(t, resp, body, http.StatusServiceUnavailable, problem.StoreUnavailable)
		if resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: 503 without Retry-After", r.method, r.path)
		}
	}
	if resp, body := do(t, "GET", edge+"/api/v1/events", "", nil); resp.StatusCode != 201 {
		t.Fatalf("unprotected route without Redis: %d %s", resp.StatusCode, body)
	}
}
