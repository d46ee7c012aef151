package http

import (
	"crypto/sha256"
	"crypto/subtle"
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
	if raw == "" || s.users == nil {
		return booking.ErrUnauthorized
	}
	if err := session.CheckCSRF(c, fromCookie); err != nil {
		return err
	}
	id, err := s.users.Verify(raw)
	if err != nil || len(id) > 256 {
		return booking.ErrUnauthorized
	}
	if rc := requestCtxOf(c); rc != nil {
		rc.user = id
	} else {
		c.Locals(userIDKey, id)
	}
	return c.Next()
}

// The verified-token cache's bounds. A fan's token is accepted from the cache until it expires, and at most
// userCacheTTL after the verifier last checked it.
const (
	userCacheSize = 100000
	userCacheTTL  = 5 * time.Second
)

// UserID is the caller's id, set by RequireUser.
func UserID(c *fiber.Ctx) string {
	if rc := requestCtxOf(c); rc != nil && rc.user != "" {
		return rc.user
	}
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
