package http_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/shared/token"
)

const (
	adminToken = "adm_test_0123456789abcdef"
	secret     = "test-secret-test-secret-test-secret-xx"
)

type harness struct {
	t    testing.TB
	env  *bookingtest.Env
	srv  *bookinghttp.Server
	iss  *token.UserIssuer
	base string
}

func newHarness(t testing.TB, env *bookingtest.Env, configure ...func(*bookinghttp.Config)) *harness {
	t.Helper()
	iss, err := token.NewUserIssuer([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	hub := redis.NewHub(env.RDB)
	t.Cleanup(hub.Close)
	al := audit.New(env.Pool)
	cfg := bookinghttp.Config{
		Audit:      al,
		Service:    env.Svc,
		Users:      token.NewUserVerifier([]byte(secret), nil, 0),
		Guests:     iss,
		AdminToken: adminToken,
		Feed:       hub,
		BodyLimit:  16 << 10,
		Ready: []store.Check{
			{Name: "postgres", Ping: env.Pool.Ping},
			{Name: "redis", Ping: func(ctx context.Context) error { return env.RDB.Ping(ctx).Err() }},
		},
	}
	for _, f := range configure {
		f(&cfg)
	}
	srv := bookinghttp.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &harness{t: t, env: env, srv: srv, iss: iss, base: "http://" + ln.Addr().String()}
}

// with returns h reporting to t (a fuzz target must not use the F).
func (h *harness) with(t testing.TB) *harness {
	c := *h
	c.t = t
	return &c
}

// user returns a user token for id.
func (h *harness) user(id string) string {
	tok, err := h.iss.Issue(id, time.Now(), time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

type response struct {
	status int
	header nethttp.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends a request through fiber's in-memory transport.
func (h *harness) do(method, path, auth, body string, headers ...string) response {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// problemOf checks r is a problem+json body with its status and returns it.
func problemOf(t testing.TB, r response) problem.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("content type %q, want %s (status %d, body %s)", ct, problem.ContentType, r.status, r.body)
	}
	var p problem.Problem
	r.json(t, &p)
	if p.Status != r.status || !strings.HasPrefix(p.Type, problem.TypeBase) {
		t.Fatalf("problem %+v for status %d", p, r.status)
	}
	return p
}

func holdBody(show string, seats ...string) string {
	b, _ := json.Marshal(map[string]any{"showId": show, "seatIds": seats})
	return string(b)
}

func newEnv(t testing.TB) *bookingtest.Env { return bookingtest.New(t, booking.Config{}) }
