package http

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/session"
)

const userIDKey = "flashseat.user"

// RequireUser lets through requests with a valid user token and records the user id (UserID). The token is the
// Authorization bearer, else the fs_session cookie; a cookie-authenticated write must pass the CSRF rule
// (shared/session).
func (s *Server) RequireUser(c *fiber.Ctx) error {
	raw, fromCookie := session.Token(c)
	if raw == "" || s.cfg.Users == nil {
		return booking.ErrUnauthorized
	}
	if err := session.CheckCSRF(c, fromCookie); err != nil {
		return err
	}
	id, ok := s.users.get(raw)
	if !ok {
		var err error
		id, err = s.cfg.Users.Verify(raw)
		if err != nil || len(id) > 256 {
			return booking.ErrUnauthorized
		}
		s.users.put(strings.Clone(raw), id) // the cache outlives the request's buffer
	}
	c.Locals(userIDKey, id)
	return c.Next()
}

// userCache remembers verified user tokens for a few seconds: a fan in a flash crowd sends many requests with
// one token, and checking its signature each time cost more CPU than deciding the hold. A token is thus accepted
// at most userCacheTTL past its expiry, within the order of the verifier's clock-skew leeway.
type userCache struct {
	mu sync.Mutex
	m  map[string]userEntry
}

type userEntry struct {
	id    string
	until time.Time
}

const (
	userCacheTTL  = 5 * time.Second
	userCacheSize = 100000
)

func (u *userCache) get(raw string) (string, bool) {
	u.mu.Lock()
	e, ok := u.m[raw]
	u.mu.Unlock()
	if !ok || time.Now().After(e.until) {
		return "", false
	}
	return e.id, true
}

func (u *userCache) put(raw, id string) {
	u.mu.Lock()
	if u.m == nil || len(u.m) >= userCacheSize {
		u.m = make(map[string]userEntry) // crude bound: forget everything rather than grow
	}
	u.m[raw] = userEntry{id: id, until: time.Now().Add(userCacheTTL)}
	u.mu.Unlock()
}

// UserID is the caller's id, set by RequireUser.
func UserID(c *fiber.Ctx) string {
	id, _ := c.Locals(userIDKey).(string)
	return id
}

// tokenEqual compares secrets in constant time (hashing first, so their lengths leak nothing either).
func tokenEqual(got, want string) bool {
	if want == "" || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// RequireAdmin lets through requests carrying the admin token: none is 401, another token 403.
func (s *Server) RequireAdmin(c *fiber.Ctx) error {
	raw := session.Bearer(c)
	switch {
	case raw == "":
		return booking.ErrUnauthorized
	case !tokenEqual(raw, s.cfg.AdminToken):
		return booking.ErrForbidden
	}
	return c.Next()
}

// RequireStaff lets through requests carrying the staff or the admin token (check-in).
func (s *Server) RequireStaff(c *fiber.Ctx) error {
	raw := session.Bearer(c)
	switch {
	case raw == "":
		return booking.ErrUnauthorized
	case !tokenEqual(raw, s.cfg.StaffToken) && !tokenEqual(raw, s.cfg.AdminToken):
		return booking.ErrForbidden
	}
	return c.Next()
}

type guestResponse struct {
	UserID string `json:"userId"`
	Token  string `json:"token"`
}

// guest signs a token for a new guest identity.
func (s *Server) guest(c *fiber.Ctx) error {
	if s.cfg.Guests == nil {
		return errGuestsOff
	}
	id := booking.NewID("g_")
	now := time.Now()
	tok, err := s.cfg.Guests.Issue(id, now, s.cfg.GuestTTL)
	if err != nil {
		return err
	}
	// The cookie is the browser's identity on every page; the body serves API clients.
	session.Set(c, tok, now.Add(s.cfg.GuestTTL), s.cfg.SecureCookies)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusCreated).JSON(guestResponse{UserID: id, Token: tok})
}

// me tells a page who it is signed in as (RequireUser answers 401 when nobody is).
func (s *Server) me(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"userId": UserID(c)})
}
