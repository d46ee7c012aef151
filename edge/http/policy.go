package http

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/edge/ratelimit"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/holdbody"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
)

// Limits are the rate limits of one route class. A nil or disabled limiter does not limit.
type Limits struct {
	PerIP   *ratelimit.Limiter
	PerUser *ratelimit.Limiter
}

// User returns the id of the caller's verified user token, or "".
func User(c *fiber.Ctx) string {
	return stateOf(c).user
}

// authenticate verifies the caller's user token once per request (or finds it among the recently verified,
// token.UserCache), so the rate limits and the gate agree on who the caller is: the Bearer header, else the fs_session
// cookie (shared/session). A missing or invalid token is not refused here: most routes are public, and booking
// answers 401 on its own routes. A state-changing request authenticated by the cookie must pass the CSRF rule,
// here for every route the edge serves or forwards.
func (s *Server) authenticate(c *fiber.Ctx) error {
	raw, fromCookie := session.Token(c)
	if raw == "" {
		return c.Next()
	}
	if err := session.CheckCSRF(c, fromCookie); err != nil {
		return err
	}
	if s.users == nil {
		return c.Next()
	}
	if uid, err := s.users.Verify(raw); err == nil {
		stateOf(c).user = uid
	}
	return c.Next()
}

// limit applies the route class's per-address and per-user limits. Addresses in RateExempt (by default
// loopback: a load generator or sidecar on the same host) are not limited by address; their users still are.
func (s *Server) limit(c *fiber.Ctx) error {
	class := classOf(c)
	l, ok := s.cfg.Limits[class]
	if !ok {
		return c.Next()
	}
	now := time.Now()
	if addr := ClientAddr(c); l.PerIP.Enabled() && addr.IsValid() && !s.cfg.RateExempt.Contains(addr) {
		if ok, wait := l.PerIP.Allow(edge.LimitKey(addr), now); !ok {
			s.metrics.rateLimited.WithLabelValues(class.String(), "ip").Inc()
			return &edge.RateLimitError{RetryAfter: wait}
		}
	}
	if user := User(c); user != "" && l.PerUser.Enabled() {
		if ok, wait := l.PerUser.Allow(user, now); !ok {
			s.metrics.rateLimited.WithLabelValues(class.String(), "user").Inc()
			return &edge.RateLimitError{RetryAfter: wait}
		}
	}
	return c.Next()
}

// gate lets a request for a protected route pass only as shared/admission's Gate allows. It matches both the
// path as sent and fasthttp's decoded, normalised path, so no spelling of a protected route slips past.
func (s *Server) gate(c *fiber.Ctx) error {
	if s.cfg.Gate == nil {
		return c.Next()
	}
	r := routeOf(c)
	if r.Guard == edge.Ungated {
		r = edge.Match(c.Method(), string(c.Request().URI().Path()))
	}
	if r.Guard == edge.Ungated {
		return c.Next()
	}
	raw := c.Get(admission.Header)
	user := User(c)

	if r.Guard == edge.VerifyTokenIfSent {
		if raw == "" {
			return c.Next() // booking knows the booking's show and decides
		}
		if err := s.verifyUnboundToken(raw, user); err != nil {
			return err
		}
		return c.Next()
	}
	show := r.ShowID
	if r.Guard == edge.RequireBodyShowAdmission {
		if ce := c.Get(fiber.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
			return edge.ErrEncodedBody // booking would decode it and act on a show the gate never saw
		}
		show = showInBody(c.Request().Body())
		if show == "" {
			return c.Next() // booking answers 400 for a hold without a show
		}
	}
	if s.cfg.Gate.Open(show) {
		return c.Next() // the queue is off, as read under a second ago: nothing to check, no store to wait for
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if err := s.admit(ctx, c, show, raw, r.Write); err != nil {
		return err
	}
	return c.Next()
}

// admit decides whether the request may reach show's protected routes: nil when the queue is off or the
// admission token (raw, else the show's cookie) is valid for the caller. A write needs a user token; a read
// without one (a browser following the waiting room's redirect) accepts the token for its own subject.
func (s *Server) admit(ctx context.Context, c *fiber.Ctx, show, raw string, write bool) error {
	if raw == "" {
		raw = c.Cookies(admission.CookieName(show))
	}
	subject := User(c)
	if subject == "" {
		if write {
			on, err := s.cfg.Gate.Enabled(ctx, show)
			if err != nil {
				return fmt.Errorf("%w: %v", edge.ErrUnavailable, err)
			}
			if on {
				return edge.ErrUnauthenticated
			}
			return nil
		}
		if raw != "" { // no token, no subject: reading one from "" only builds a parse error
			subject = unverifiedSubject(raw)
		}
	}
	if _, err := s.cfg.Gate.Check(ctx, show, subject, raw); err != nil {
		if errors.Is(err, admission.ErrRequired) {
			return &edge.AdmissionError{ShowID: show, Err: err}
		}
		return fmt.Errorf("%w: %v", edge.ErrUnavailable, err)
	}
	return nil
}

// gateCheck is GET /queue/{showId}/gate: the gate's answer for a show's protected reads, without the request
// itself, for a CDN or an nginx auth_request in front of the edge. 204: pass (queue off, or a valid admission
// token in the header or the show's cookie); 401: the queue is on and no token was sent; 403: the token was
// refused (expired, revoked, another show's or user's, forged). It never redirects (auth_request reads only the
// status), and no answer may be cached: admission and revocation change by the second.
func (s *Server) gateCheck(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	show := c.Params("showId")
	if show == "" || len(show) > 128 || strings.ContainsAny(show, "/?#%") {
		return fmt.Errorf("%w: show id", edge.ErrBadRequest)
	}
	show = strings.Clone(show)
	if s.cfg.Gate == nil {
		return c.SendStatus(fiber.StatusNoContent)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	raw := c.Get(admission.Header)
	err := s.admit(ctx, c, show, raw, false)
	var refused *edge.AdmissionError
	switch {
	case err == nil:
		return c.SendStatus(fiber.StatusNoContent)
	case errors.As(err, &refused) && raw == "" && c.Cookies(admission.CookieName(show)) == "":
		return edge.ErrUnauthenticated
	case errors.As(err, &refused):
		return problem.New(fiber.StatusForbidden, problem.QueueRequired, "The admission token was refused.").
			With("queueUrl", edge.QueueURL(show)).With("showId", show).With("reason", admission.Reason(refused.Err))
	}
	return err
}

// verifyUnboundToken checks an admission token on a route that does not name its show (paying a booking) as a
// CDN could: signature, expiry, audience and user. Revocation is not checked here: booking checks it, and only
// for a new payment attempt. A confirmed sale ends the admission (revokes its token), and a fan whose answer was
// lost (a dropped connection, an edge restart) must still get the replay of that payment, not a 403 from here.
// Whether the token's show is the booking's show, and whether that show's queue is on, only booking can tell.
func (s *Server) verifyUnboundToken(raw, user string) error {
	show := unverifiedShow(raw)
	if show == "" {
		return &edge.AdmissionError{ShowID: "", Err: fmt.Errorf("%w: %w", admission.ErrRequired, token.ErrInvalid)}
	}
	if user == "" {
		return edge.ErrUnauthenticated
	}
	if _, err := s.cfg.Admission.Verify(raw, show, user); err != nil {
		return &edge.AdmissionError{ShowID: show, Err: fmt.Errorf("%w: %w", admission.ErrRequired, err)}
	}
	return nil
}

// showInBody reads a hold's "showId" without consuming the body, which is forwarded as it came, as booking reads
// it: by holdbody.Decode. A body it refuses is booking's to refuse.
func showInBody(body []byte) string {
	b, err := holdbody.Decode(body)
	if err != nil {
		return ""
	}
	return b.ShowID
}

var claimsParser = jwt.NewParser()

// unverifiedShow and unverifiedSubject read a claim before verification, only to know what to verify against;
// the Gate's verification then decides.
func unverifiedShow(raw string) string {
	var c token.Admission
	if _, _, err := claimsParser.ParseUnverified(raw, &c); err != nil {
		return ""
	}
	return c.Show
}

func unverifiedSubject(raw string) string {
	var c token.Admission
	if _, _, err := claimsParser.ParseUnverified(raw, &c); err != nil {
		return ""
	}
	return c.Subject
}
