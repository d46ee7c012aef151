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

var testUserSecret = []byte(strings.Repeat("s", token.MinSecretLen))

func issueUser(t *testing.T, user string, issued time.Time, ttl time.Duration) string {
	t.Helper()
	is, err := token.NewUserIssuer(testUserSecret)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := is.Issue(user, issued, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestUserCache(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	clock := now
	u := newUserCache(3)
	u.now = func() time.Time { return clock }

	raw := issueUser(t, "u1", now.Add(-time.Minute), time.Minute+3*time.Second) // expires at now+3s
	if _, ok := u.get(raw); ok {
		t.Fatal("a token never verified is cached")
	}
	u.put(raw, "u1")
	if id, ok := u.get(raw); !ok || id != "u1" {
		t.Fatalf("get = %q, %v; want u1, true", id, ok)
	}
	clock = now.Add(3 * time.Second) // the token's expiry, before userCacheTTL
	if id, ok := u.get(raw); ok {
		t.Fatalf("expired token still cached for %q", id)
	}

	long := issueUser(t, "u2", now, time.Hour)
	clock = now
	u.put(long, "u2")
	clock = now.Add(userCacheTTL)
	if _, ok := u.get(long); ok {
		t.Fatal("entry outlived userCacheTTL")
	}

	expired := issueUser(t, "u3", now.Add(-time.Hour), time.Hour-time.Second) // within a verifier's leeway
	clock = now
	u.put(expired, "u3")
	if _, ok := u.get(expired); ok {
		t.Fatal("a token past its expiry was cached")
	}
	u.put("not.a.token", "u4")
	if _, ok := u.get("not.a.token"); ok {
		t.Fatal("a token without an expiry was cached")
	}

	for i := range 10 { // bounded
		u.put(issueUser(t, "u", now.Add(time.Duration(i)*time.Second), time.Hour), "u")
		if len(u.m) > u.max {
			t.Fatalf("%d entries, bound %d", len(u.m), u.max)
		}
	}
}

// Through authenticate: a cached token is not accepted past its expiry.
func TestAuthenticateRefusesExpiredCachedToken(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{Users: token.NewUserVerifier(testUserSecret, nil, 0)}, users: newUserCache(10)}
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
	raw := issueUser(t, "u1", exp.Add(-time.Hour), time.Hour)
	for range 3 {
		if got := who(raw); got != "u1" {
			t.Fatalf("user %q, want u1", got)
		}
	}
	if _, ok := s.users.get(raw); !ok {
		t.Fatal("verified token not cached")
	}
	time.Sleep(time.Until(exp) + 100*time.Millisecond)
	if got := who(raw); got != "" {
		t.Fatalf("expired token accepted for %q", got)
	}
	if got := who(raw + "x"); got != "" {
		t.Fatalf("forged token accepted for %q", got)
	}
}
