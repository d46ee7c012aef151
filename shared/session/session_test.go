package session_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/session"
)

// TestTokenAndCSRF: the Bearer header wins over the cookie, and only an unsafe request the cookie authenticates
// needs the CSRF header.
func TestTokenAndCSRF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, auth, cookie, xrw string
		wantRaw                         string
		wantErr                         error
	}{
		{"nothing", "POST", "", "", "", "", nil},
		{"bearer", "POST", "Bearer b", "", "", "b", nil},
		{"bearer wins over the cookie", "POST", "Bearer b", "c", "", "b", nil},
		{"cookie read", "GET", "", "c", "", "c", nil},
		{"cookie write without the header", "POST", "", "c", "", "c", session.ErrCSRF},
		{"cookie delete without the header", "DELETE", "", "c", "", "c", session.ErrCSRF},
		{"cookie write with another value", "PUT", "", "c", "XMLHttpRequest", "c", session.ErrCSRF},
		{"cookie write with the header", "PATCH", "", "c", "flashseat", "c", nil},
		{"cookie head", "HEAD", "", "c", "", "c", nil},
		{"basic auth is no bearer", "POST", "Basic x", "c", "", "c", session.ErrCSRF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := fiber.New()
			var raw string
			var err error
			app.All("/", func(c *fiber.Ctx) error {
				var fromCookie bool
				raw, fromCookie = session.Token(c)
				raw = string([]byte(raw))
				err = session.CheckCSRF(c, fromCookie)
				return nil
			})
			req := httptest.NewRequest(tc.method, "/", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.cookie != "" {
				req.Header.Set("Cookie", session.Cookie+"="+tc.cookie)
			}
			if tc.xrw != "" {
				req.Header.Set(session.CSRFHeader, tc.xrw)
			}
			if _, e := app.Test(req); e != nil {
				t.Fatal(e)
			}
			if raw != tc.wantRaw || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("got %q, %v; want %q, %v", raw, err, tc.wantRaw, tc.wantErr)
			}
		})
	}
}
