package http

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/shared/problem"
)

// A handler that panics costs its own request a 500 problem, never the process: the next request is served.
func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	s := New(Config{
		Proxy:    ProxyConfig{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}},
		Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	s.App.Get("/boom", func(*fiber.Ctx) error { panic("boom") })
	for range 2 {
		resp, err := s.App.Test(httptest.NewRequest("GET", "/boom", nil))
		if err != nil {
			t.Fatal(err)
		}
		var p problem.Problem
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 || p.Status != 500 {
			t.Fatalf("status %d (problem %+v), want 500", resp.StatusCode, p)
		}
	}
	resp, err := s.App.Test(httptest.NewRequest("GET", "/healthz", nil))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after a panic: %v %v", resp, err)
	}
}
