package http

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/token"
)

// Through authenticate: a cached token is not accepted past its expiry.
func TestAuthenticateRefusesExpiredCachedToken(t *testing.T) {
	t.Parallel()
	secret := []byte(strings.Repeat("s", token.MinSecretLen))
	issuer, err := token.NewUserIssuer(secret)
	if err != nil {
		t.Fatal(err)
	}
	users := token.NewUserVerifier(secret, nil, 0)
	s := &Server{cfg: Config{Users: users}, users: token.NewUserCache(users, 10, userCacheTTL)}
	app := fiber.New()
	app.Use(s.authenticate)
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(User(c)) })
	who := func(raw string) string {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", "Bearer "+raw)
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	now := time.Now()
	exp := now.Truncate(time.Second).Add(2 * time.Second)
	raw, err := issuer.Issue("u1", exp.Add(-time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := who(raw); got != "u1" {
			t.Fatalf("user %q, want u1", got)
		}
	}
	if s.users.Len() != 1 {
		t.Fatalf("%d tokens cached, want the one verified", s.users.Len())
	}
	time.Sleep(time.Until(exp) + 100*time.Millisecond)
	if got := who(raw); got != "" {
		t.Fatalf("expired token accepted for %q", got)
	}
	if got := who(raw + "x"); got != "" {
		t.Fatalf("forged token accepted for %q", got)
	}
}
