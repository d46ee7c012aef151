package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
)

// Every error a handler can return reaches the client through the one table, as a problem.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: NewMetrics(prometheus.NewRegistry())}
	refused := &edge.AdmissionError{ShowID: "s1", Err: fmt.Errorf("%w: %w", admission.ErrRequired, token.ErrExpired)}
	tests := []struct {
		name   string
		err    error
		accept string
		status int
		slug   string
	}{
		{"bad request", fmt.Errorf("%w: header", edge.ErrBadRequest), "", 400, problem.BadRequest},
		{"compressed hold", edge.ErrEncodedBody, "", 415, problem.UnsupportedMedia},
		{"no user", edge.ErrUnauthenticated, "", 401, problem.Unauthorized},
		{"cookie write without the CSRF header", session.ErrCSRF, "", 403, problem.CSRF},
		{"forged user token", fmt.Errorf("%w: bad signature", token.ErrInvalid), "", 401, problem.Unauthorized},
		{"expired user token", token.ErrExpired, "", 401, problem.Unauthorized},
		{"rate limited", &edge.RateLimitError{RetryAfter: 1500 * time.Millisecond}, "", 429, problem.RateLimited},
		{"upstream down", fmt.Errorf("%w: refused", edge.ErrUpstreamUnavailable), "", 502, problem.BadGateway},
		{"upstream slow", fmt.Errorf("%w: slow", edge.ErrUpstreamTimeout), "", 504, problem.GatewayTimeout},
		{"redis down", fmt.Errorf("%w: redis", edge.ErrUnavailable), "", 503, problem.StoreUnavailable},
		{"admission, API client", refused, "application/json", 403, problem.QueueRequired},
		{"admission, browser", refused, "text/html", 303, ""},
		{"fiber's own", fiber.ErrRequestEntityTooLarge, "", 413, problem.PayloadTooLarge},
		{"a problem passes through", problem.New(409, problem.Conflict, "x"), "", 409, problem.Conflict},
		{"anything else", errors.New("boom"), "", 500, problem.Internal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := fiber.New(fiber.Config{ErrorHandler: s.handleError})
			app.Get("/", func(c *fiber.Ctx) error { c.Set("X-Leftover", "1"); return tc.err })
			req := httptest.NewRequest("GET", "/", nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := app.Test(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if resp.Header.Get("X-Leftover") != "" {
				t.Fatal("headers set before the error leaked into the error answer")
			}
			if tc.status == 303 {
				if loc := resp.Header.Get("Location"); loc != "/queue/s1" {
					t.Fatalf("Location %q", loc)
				}
				return
			}
			var p problem.Problem
			if resp.Header.Get("Content-Type") != problem.ContentType || json.Unmarshal(body, &p) != nil ||
				p.Type != problem.TypeBase+tc.slug {
				t.Fatalf("got %s %s, want problem %s", resp.Header.Get("Content-Type"), body, tc.slug)
			}
			if tc.status == 503 && resp.Header.Get("Retry-After") == "" {
				t.Fatal("a 503 without Retry-After")
			}
			if tc.status == 429 && resp.Header.Get("Retry-After") != "2" {
				t.Fatalf("Retry-After %q, want 2 (rounded up)", resp.Header.Get("Retry-After"))
			}
			if tc.status == 500 && strings.Contains(string(body), "boom") {
				t.Fatal("internal error text reached the client")
			}
		})
	}
}

func TestShowInBody(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`{"showId":"s1","seatIds":["A1"]}`: "s1",
		`{"seatIds":["A1"]}`:               "",
		`{"showId":12}`:                    "",
		`not json`:                         "",
		``:                                 "",
		`{"showId":"s1"} trailing`:         "",
		// Where the hand-written reader declines, encoding/json reads the show as booking will: in any case,
		// the last of repeated keys, through escapes; and a body booking cannot decode names no show.
		`{"SHOWID":"s1","seatIds":["A1"]}`:               "s1",
		`{"showId":"s1","showId":"s2","seatIds":["A1"]}`: "s2",
		`{"showId":"s\u0031","seatIds":["A1"]}`:          "s1",
		`{"showId":"s1","seatIds":"A1"}`:                 "",
	}
	for body, want := range tests {
		if got := showInBody([]byte(body)); got != want {
			t.Errorf("showInBody(%q) = %q, want %q", body, got, want)
		}
	}
}
