// Package session is how a fan's identity travels with a browser's requests, shared by edge, waitroom and booking:
// the fs_session cookie that carries the user token, the order in which a request's credentials are read, and the
// one CSRF rule for requests a cookie authenticates.
//
// Why a header and not a CSRF token: a cross-site form cannot set a request header, and a cross-origin fetch that
// sets one needs a CORS preflight that no flashseat service grants. So an unsafe request that carries the header
// came from a page of our own origin, and nothing has to be stored or compared.
package session

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/flashseat/flashseat/shared/problem"
)

// Cookie carries the fan's user token (the token POST /api/v1/auth/guest returns). HttpOnly: page scripts never
// see it.
const Cookie = "fs_session"

// CSRFHeader and CSRFValue are the header every page script sends, and that an unsafe request authenticated by a
// cookie must carry.
const (
	CSRFHeader = "X-Requested-With"
	CSRFValue  = "flashseat"
)

// ErrCSRF refuses an unsafe request authenticated by a cookie without the CSRF header. Services map it to 403 with
// problem type /csrf (Problem).
var ErrCSRF = errors.New("session: a request authenticated by cookie must carry X-Requested-With: flashseat")

// CSRFDetail is the detail of the 403 answering ErrCSRF.
const CSRFDetail = "A request authenticated by the session cookie must carry the header X-Requested-With: flashseat."

// Problem is the answer to ErrCSRF, for services whose error table builds problems from a slug and a detail.
func Problem() *problem.Problem {
	return problem.New(fiber.StatusForbidden, problem.CSRF, CSRFDetail)
}

// The request headers read on every request, named as fasthttp stores them (already canonical): PeekCanonical
// skips the copy and normalisation of the name that Ctx.Get does on each call.
var (
	headerAuthorization = []byte(fiber.HeaderAuthorization)
	headerCookie        = []byte(fiber.HeaderCookie)
)

// Bearer returns the Authorization header's bearer token, or "". It points into fiber's buffer: copy it to keep it.
func Bearer(c *fiber.Ctx) string {
	h := utils.UnsafeString(c.Request().Header.PeekCanonical(headerAuthorization))
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// Token returns the request's user token: the Authorization bearer first, else the fs_session cookie, and
// whether it came from the cookie. It points into fiber's buffers: copy it to keep it past the handler.
func Token(c *fiber.Ctx) (raw string, fromCookie bool) {
	if raw = Bearer(c); raw != "" {
		return raw, false
	}
	if len(c.Request().Header.PeekCanonical(headerCookie)) == 0 {
		return "", false // API clients: no cookie to parse
	}
	raw = c.Cookies(Cookie)
	return raw, raw != ""
}

// Unsafe reports whether a method may change state (RFC 9110 §9.2.1: everything but GET, HEAD, OPTIONS, TRACE).
func Unsafe(method string) bool {
	switch method {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions, fiber.MethodTrace:
		return false
	}
	return true
}

// CheckCSRF is the one CSRF rule: an unsafe request whose credential is a cookie (fromCookie) must carry
// X-Requested-With: flashseat, else ErrCSRF. Requests with a Bearer header are not checked: a browser never adds
// one on its own.
func CheckCSRF(c *fiber.Ctx, fromCookie bool) error {
	if !fromCookie || !Unsafe(c.Method()) {
		return nil
	}
	if !strings.EqualFold(c.Get(CSRFHeader), CSRFValue) {
		return ErrCSRF
	}
	return nil
}

// Set writes the session cookie for raw, expiring with the token: HttpOnly, SameSite=Lax (a link from another
// site still arrives signed in; a cross-site POST does not carry it), Path=/, Secure when the site is served over
// TLS (COOKIE_SECURE).
func Set(c *fiber.Ctx, raw string, expires time.Time, secure bool) {
	c.Cookie(&fiber.Cookie{Name: Cookie, Value: raw, Path: "/", Expires: expires, HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: secure})
}
