// Package console is the operator console the edge serves at /admin: sign-in with the operator token exchanged
// for a short-lived signed session cookie, the page and its scripts, the live figures of every upcoming show over
// one event stream, and the forwarding of the page's /admin/v1 calls with the operator token added, so the token
// itself never reaches the browser after sign-in.
package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/edge"
	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/edge/ratelimit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/strictjson"
)

// Cookie carries the console session. Its path is /admin: no other route of the platform ever sees it.
const Cookie = "fs_console"

// OperatorHeader names the operator on forwarded admin requests, for the audit log.
const OperatorHeader = "X-Operator"

// Config assembles a Console.
type Config struct {
	AdminToken string // ADMIN_TOKEN; empty: sign-in refuses everyone
	Redis      redis.UniversalClient
	SessionTTL time.Duration // CONSOLE_SESSION_TTL, default 8h
	Secure     bool          // COOKIE_SECURE
	// SignInLimit bounds sign-in attempts per client address (per second, with a burst).
	SignInRate  float64
	SignInBurst int
	Figures     *Figures // the live figures the page's stream carries
	Log         *slog.Logger
}

// Console serves the operator console.
type Console struct {
	cfg      Config
	sessions *sessions
	signIns  *ratelimit.Limiter
	figures  *Figures
	log      *slog.Logger
	stop     chan struct{}
}

// New returns a console.
func New(cfg Config) *Console {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.SignInRate <= 0 {
		cfg.SignInRate, cfg.SignInBurst = 0.2, 10
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Console{cfg: cfg, sessions: newSessions(cfg.AdminToken, cfg.Redis, cfg.SessionTTL),
		signIns: ratelimit.New(cfg.SignInRate, cfg.SignInBurst, 10000), figures: cfg.Figures, log: cfg.Log,
		stop: make(chan struct{})}
}

// Close ends the open figure streams (at shutdown, so the server can drain).
func (con *Console) Close() {
	select {
	case <-con.stop:
	default:
		close(con.stop)
	}
}

// Mount adds the console's routes to r. Call it before any /admin/v1 route is added: the session middleware must
// run before them.
func (con *Console) Mount(r fiber.Router) {
	r.Use("/admin/v1", con.forward)
	r.Get("/admin", con.page)
	r.Get("/admin/assets/:version/:name", con.asset)
	r.Post("/admin/session", con.signIn)
	r.Get("/admin/session", con.whoami)
	r.Delete("/admin/session", con.signOut)
	r.Get("/admin/live", con.live)
	r.Get("/admin/figures", con.figuresNow)
	r.Get("/admin/shows/:showId/report", con.report)
}

// forward lets an operator API call through with the operator token added when it carries a valid console
// session instead of a Bearer token, and the operator's name for the audit log. A Bearer request passes as it
// came (scripts keep working); a request with neither passes too, and the service refuses it.
func (con *Console) forward(c *fiber.Ctx) error {
	if c.Get(fiber.HeaderAuthorization) != "" {
		return c.Next()
	}
	raw := c.Cookies(Cookie)
	if raw == "" {
		return c.Next()
	}
	ss, err := con.session(c, raw)
	if err != nil {
		return err
	}
	if err := session.CheckCSRF(c, true); err != nil {
		return err
	}
	c.Request().Header.Set(fiber.HeaderAuthorization, "Bearer "+con.cfg.AdminToken)
	c.Request().Header.Set(OperatorHeader, "console:"+ss.Operator)
	// The session cookie is the edge's business; the services behind it never see it.
	c.Request().Header.DelCookie(Cookie)
	return c.Next()
}

// session checks the request's console cookie.
func (con *Console) session(c *fiber.Ctx, raw string) (Session, error) {
	ss, err := con.sessions.check(c.UserContext(), raw)
	switch {
	case err == nil:
		return ss, nil
	case err == errNoSession || err == errRevoked:
		return Session{}, problem.New(http.StatusUnauthorized, problem.Unauthorized,
			"The console session has ended; sign in again.")
	}
	con.log.Warn("console session check failed", "err", err, "requestId", edgehttp.RequestID(c))
	c.Set(fiber.HeaderRetryAfter, "1")
	return Session{}, problem.New(http.StatusServiceUnavailable, problem.ServiceUnavailable,
		"Sessions cannot be checked right now; retry in a second.")
}

type signInRequest struct {
	Token    string `json:"token"`
	Operator string `json:"operator"`
}

type sessionJSON struct {
	Operator  string    `json:"operator"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// signIn exchanges the operator token for a session cookie. Attempts are limited per client address, so the
// token cannot be guessed through this form faster than the limit allows.
func (con *Console) signIn(c *fiber.Ctx) error {
	// The platform's CSRF rule (shared/session) holds for sign-in too: only the console's own script signs in.
	if err := session.CheckCSRF(c, true); err != nil {
		return err
	}
	if ok, wait := con.signIns.Allow(edge.LimitKey(edgehttp.ClientAddr(c)), time.Now()); !ok {
		return &edge.RateLimitError{RetryAfter: wait}
	}
	var req signInRequest
	err := strictjson.Unmarshal(c.Body(), &req)
	if ue := (*strictjson.UnknownFieldError)(nil); errors.As(err, &ue) {
		return problem.New(http.StatusUnprocessableEntity, problem.Validation, ue.Error())
	}
	if err != nil {
		return problem.New(http.StatusBadRequest, problem.BadRequest, "The body must be JSON: {\"token\",\"operator\"}.")
	}
	op, ok := operatorName(req.Operator)
	if !ok {
		return problem.New(http.StatusUnprocessableEntity, problem.Validation,
			"Your name must be 1 to 40 letters, digits, spaces, dots, dashes or underscores.")
	}
	if !tokenEqual(req.Token, con.cfg.AdminToken) {
		return problem.New(http.StatusUnauthorized, problem.Unauthorized, "That is not the operator token.")
	}
	ss, cookie := con.sessions.issue(op)
	c.Cookie(&fiber.Cookie{Name: Cookie, Value: cookie, Path: "/admin", Expires: ss.Expires, HTTPOnly: true,
		SameSite: fiber.CookieSameSiteStrictMode, Secure: con.cfg.Secure})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(http.StatusCreated).JSON(sessionJSON{Operator: ss.Operator, ExpiresAt: ss.Expires})
}

// whoami answers the current session, or 401.
func (con *Console) whoami(c *fiber.Ctx) error {
	ss, err := con.session(c, c.Cookies(Cookie))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(sessionJSON{Operator: ss.Operator, ExpiresAt: ss.Expires})
}

// signOut ends the session on every replica and clears the cookie.
func (con *Console) signOut(c *fiber.Ctx) error {
	if err := session.CheckCSRF(c, true); err != nil {
		return err
	}
	ss, err := con.session(c, c.Cookies(Cookie))
	if err != nil {
		return err
	}
	if err := con.sessions.revoke(c.UserContext(), ss); err != nil {
		con.log.Warn("console sign-out", "err", err, "requestId", edgehttp.RequestID(c))
		c.Set(fiber.HeaderRetryAfter, "1")
		return problem.New(http.StatusServiceUnavailable, problem.ServiceUnavailable,
			"Signing out failed; retry in a second.")
	}
	c.Cookie(&fiber.Cookie{Name: Cookie, Value: "", Path: "/admin", Expires: time.Unix(0, 0), MaxAge: -1,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode, Secure: con.cfg.Secure})
	return c.SendStatus(http.StatusNoContent)
}

// operatorName is the name an operator gives at sign-in, recorded with each of their changes; "operator" when
// they give none.
func operatorName(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "operator", true
	}
	if len(s) > 40 {
		return "", false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ' ' && r != '.' && r != '-' && r != '_' {
			return "", false
		}
	}
	return s, true
}

// tokenEqual compares secrets in constant time (hashing first, so their lengths leak nothing either).
func tokenEqual(got, want string) bool {
	if want == "" || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
