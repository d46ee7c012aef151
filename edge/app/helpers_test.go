package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
)

// Test secrets: fixed so tests can sign what the edge verifies.
const (
	testSeed   = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" // 32 bytes 0..31, base64url
	testSecret = "test-secret-test-secret-test-secret-0123"
)

// startEdge runs the real edge (Run) on a loopback port with env over the defaults, and stops it at cleanup,
// failing the test if the shutdown was not clean.
func startEdge(t testing.TB, env map[string]string) string {
	t.Helper()
	base, _ := startEdgeOps(t, env)
	return base
}

// startEdgeOps is startEdge with the operations endpoints on a port of their own, whose base URL it returns too.
func startEdgeOps(t testing.TB, env map[string]string) (base, opsBase string) {
	t.Helper()
	_, dbURL := pgtest.NewWithURL(t)
	vars := map[string]string{
		"DATABASE_URL":          dbURL,
		"OPS_ADDR":              "127.0.0.1:0",
		"EDGE_ADDR":             "127.0.0.1:0",
		"ADMISSION_SIGNING_KEY": testSeed,
		"AUTH_SECRET":           testSecret,
		// Over fasthttp's five seconds: a client's connection that has not sent a request yet (Go's transport
		// keeps spare ones) is closed by the drain only five seconds after it opened.
		"SHUTDOWN_TIMEOUT": "8s",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opsAddr := make(chan string, 1)
	cfg.OpsBound = func(a string) { opsAddr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	// The edge's warnings and errors go to the test's log, which go test shows only for a test that fails: an
	// unexpected answer (a 500) comes with the error behind it.
	tl := &testLog{t: t}
	t.Cleanup(tl.close) // registered first, so it runs after the edge has stopped
	log := slog.New(slog.NewTextHandler(tl, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { done <- Run(ctx, cfg, log, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("edge did not shut down")
			}
		})
		return "http://" + a, "http://" + <-opsAddr
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	return "", ""
}

// testRedis connects to the test's Redis (redistest).
func testRedis(t testing.TB) redis.UniversalClient { return redistest.New(t).Client }

// newShow returns a unique show id whose keys (the queue's settings and the waiting room's line alike) are deleted
// at cleanup.
func newShow(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	id := "edgetest-" + uuid.NewString()
	t.Cleanup(func() { _ = redistest.DeleteShow(context.Background(), rdb, id) })
	return id
}

// onSale writes the show's ShowInfo as booking would for a sale open an hour ago (five seats free), removed at
// cleanup: what the waiting room reads to let fans join.
func onSale(t testing.TB, rdb redis.UniversalClient, show string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	rdb.HSet(ctx, rediskey.ShowInfo(show), rediskey.InfoAvailable, 5, rediskey.InfoHeld, 0, rediskey.InfoTotalSeats, 5,
		rediskey.InfoSaleStartsAt, strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10),
		rediskey.InfoStartsAt, strconv.FormatInt(now.Add(48*time.Hour).UnixMilli(), 10))
	t.Cleanup(func() { rdb.Del(context.Background(), rediskey.ShowInfo(show)) })
}

// testLog writes log lines to a test's log until the test is over (close); later lines are dropped, since a test
// may not log once it has completed.
type testLog struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Logf("edge: %s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

func userToken(t testing.TB, user string) string {
	t.Helper()
	is, err := token.NewUserIssuer([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := is.Issue(user, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func testIssuer(t testing.TB) *token.Issuer {
	t.Helper()
	k, err := token.ParseSeed("", testSeed)
	if err != nil {
		t.Fatal(err)
	}
	return token.NewIssuer(k)
}

var client = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// do sends a request and returns the response with its body read.
func do(t testing.TB, method, url string, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return resp, b
}

// wantProblem checks that resp is an RFC 9457 problem with status and type slug, and returns it.
func wantProblem(t testing.TB, resp *http.Response, body []byte, status int, slug string) *problem.Problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("content type %q, want %q", ct, problem.ContentType)
	}
	var p problem.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body %s: %v", body, err)
	}
	if p.Type != problem.TypeBase+slug || p.Status != status || p.Title == "" {
		t.Fatalf("problem %+v, want type %s status %d", p, slug, status)
	}
	return &p
}

// counter counts upstream hits.
type counter struct{ n atomic.Int64 }

func (c *counter) inc()       { c.n.Add(1) }
func (c *counter) get() int64 { return c.n.Load() }
