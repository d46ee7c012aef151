// Package http serves the waiting room over fiber: join and status (the polling fallback), the live position
// stream (SSE, with its own non-blocking fan-out), the embedded page, the fairness record, the admission JWKS and
// the operators' queue settings. Handlers return errors; codes turns the waiting room's own into problems, and
// the edge's error handler, the one of the process that serves this package, renders them and every other error.
package http

import (
	"context"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
)

// Users verifies a fan's user token and returns their user id; token.UserVerifier is one.
type Users interface {
	Verify(raw string) (string, error)
}

// Config is what the handlers need.
type Config struct {
	Service    *waitroom.Service
	Users      Users
	Issuer     *token.Issuer // its JWKS is served at /.well-known/jwks.json
	AdminToken string        // operators' bearer token; empty refuses every operator request
	Log        *slog.Logger
	// SeatMapURL is where an admitted fan goes; default "/shows/{id}".
	SeatMapURL func(show string) string
	// SecureCookies marks cookies Secure (behind TLS).
	SecureCookies bool
	// Heartbeat is the comment interval on streams, default 15 s.
	Heartbeat time.Duration
	// Audit records every operator change (shared/audit's Log); nil records nothing.
	Audit Auditor
	// ClientAddr is the client's address as the edge's trusted-proxy policy decides it (the guard counts places
	// by its prefix); nil: unknown.
	ClientAddr func(c *fiber.Ctx) netip.Addr
	// Exempt reports addresses that stand for many clients (RATE_EXEMPT: loopback, a load generator): the guard
	// counts their clients one identity at a time rather than together.
	Exempt func(netip.Addr) bool
	// Settings reads a show's settings for join and status answers (their turnHoldSeconds); the edge's gate, with
	// its second-long cache, is one. nil: the answers leave it out.
	Settings waitroom.SettingsReader
	// PageSources are the third-party origins the page may use: the human check's, when one is configured.
	PageSources PageSources
}

// Auditor records an operator's change; shared/audit's Log is one.
type Auditor interface {
	Record(ctx context.Context, e audit.Entry) error
}

// Handler serves the waiting room.
type Handler struct {
	cfg     Config
	svc     *waitroom.Service
	log     *slog.Logger
	streams *streams
	csp     string // the page's Content-Security-Policy
}

// New returns a handler.
func New(cfg Config) *Handler {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.SeatMapURL == nil {
		cfg.SeatMapURL = func(show string) string { return "/shows/" + show }
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	return &Handler{cfg: cfg, svc: cfg.Service, log: cfg.Log, streams: newStreams(cfg.Service, cfg.Heartbeat),
		csp: pageCSP(cfg.PageSources)}
}

// Close ends every open stream (at shutdown, so the server can drain).
func (h *Handler) Close() { h.streams.close() }

// Mount adds the waiting room's routes to r. Its streams take over their connections (events.go): a server that
// keeps hijacked connections (fasthttp's KeepHijackedConns, set by whoever builds the server) lets a held stream
// go without a goroutine of its own; on any other, each stream holds its handler's goroutine until it ends.
func (h *Handler) Mount(r fiber.Router) {
	// Three segments: never a show's route, whatever the show is called.
	r.Get("/queue/assets/:version/:name", h.wrap(h.asset))
	r.Post("/queue/:showId/join", h.wrap(h.join))
	r.Get("/queue/:showId/challenge", h.wrap(h.challenge))
	r.Post("/api/v1/auth/guest", h.wrap(h.guestGate)) // then on to booking, which mints
	r.Get("/queue/:showId/status", h.wrap(h.status))
	r.Get("/queue/:showId/events", h.wrap(h.events))
	r.Get("/queue/:showId/fairness", h.wrap(h.fairness))
	r.Get("/queue/:showId/waves", h.wrap(h.publishedWaves))
	r.Get("/queue/:showId/waves/:waveId/eligible", h.wrap(h.waveEligible))
	r.Post("/api/v1/shows/:showId/registration", h.wrap(h.register))
	r.Get("/api/v1/shows/:showId/registration", h.wrap(h.registration))
	r.Get("/api/v1/me/registrations", h.wrap(h.myRegistrations))
	r.Get("/queue/:showId", h.wrap(h.page))
	r.Get("/.well-known/jwks.json", h.wrap(h.jwks))
	r.Put("/admin/v1/shows/:showId/queue", h.wrap(h.putSettings))
	r.Get("/admin/v1/shows/:showId/queue", h.wrap(h.getSettings))
	r.Post("/admin/v1/shows/:showId/admissions/:jti/revoke", h.wrap(h.kickAdmission))
	r.Post("/admin/v1/shows/:showId/fans/:userId/revoke", h.wrap(h.kickFan))
	r.Get("/admin/v1/shows/:showId/fans/:userId", h.wrap(h.fan))
	r.Get("/admin/v1/shows/:showId/bots", h.wrap(h.botFigures))
	r.Post("/admin/v1/shows/:showId/bypass-codes", h.wrap(h.issueCodes))
	r.Get("/admin/v1/shows/:showId/bypass-codes", h.wrap(h.listCodes))
	r.Delete("/admin/v1/shows/:showId/bypass-codes/:code", h.wrap(h.revokeCode))
	r.Post("/admin/v1/shows/:showId/blocked-prefixes", h.wrap(h.blockPrefix))
	r.Delete("/admin/v1/shows/:showId/blocked-prefixes", h.wrap(h.unblockPrefix))
	r.Post("/admin/v1/shows/:showId/invitations", h.wrap(h.drawWave))
	r.Get("/admin/v1/shows/:showId/invitations", h.wrap(h.listWaves))
}

// showID returns the path's show id, copied out of fiber's reused buffer.
func showID(c *fiber.Ctx) (string, error) {
	id := strings.Clone(c.Params("showId"))
	if !waitroom.ValidID(id) {
		return "", waitroom.ErrInvalid
	}
	return id, nil
}

// user authenticates a fan: the Authorization bearer, else ?access_token= (API clients' event streams), else the
// fs_session cookie every page shares (shared/session), which also authenticates the page's EventSource. A join
// authenticated by the cookie must pass the CSRF rule.
func (h *Handler) user(c *fiber.Ctx) (id string, err error) {
	id, _, err = h.userToken(c)
	return id, err
}

// userToken is user, also returning the token itself (a copy).
func (h *Handler) userToken(c *fiber.Ctx) (id, raw string, err error) {
	raw, fromCookie := session.Bearer(c), false
	if raw == "" {
		raw = c.Query("access_token")
	}
	if raw == "" {
		raw, fromCookie = session.Token(c)
	}
	if raw == "" {
		return "", "", errUnauthenticated
	}
	if err := session.CheckCSRF(c, fromCookie); err != nil {
		return "", "", err
	}
	raw = strings.Clone(raw)
	id, err = h.cfg.Users.Verify(raw)
	return id, raw, err
}

// placeJSON is the contract's body of join and status.
type placeJSON struct {
	Status         waitroom.Status `json:"status"`
	Position       int64           `json:"position,omitempty"`
	EtaSeconds     int64           `json:"etaSeconds"`
	AdmissionToken string          `json:"admissionToken,omitempty"`
	ExpiresAt      *time.Time      `json:"expiresAt,omitempty"`
	OpensAt        *time.Time      `json:"opensAt,omitempty"`
	SeatMapURL     string          `json:"seatMapUrl,omitempty"`
	// Paused: admission paused by the operator; the place is kept and the ETA unknown (etaSeconds 0).
	Paused bool `json:"paused"`
	// Receipt is the signed place receipt of a waiting fan (also in the fs_place_{show} cookie): presented on a
	// re-join, it gets the same ticket back after the waiting room lost its state.
	Receipt string `json:"receipt,omitempty"`
	// TurnHoldSeconds is how long a waiting fan's turn is held if it comes while they are away (a phone asleep):
	// back within it, with their receipt, they go to the head of the line. The page tells the fan.
	TurnHoldSeconds int `json:"turnHoldSeconds,omitempty"`
}

func seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

func (h *Handler) toJSON(show string, p waitroom.Place) placeJSON {
	out := placeJSON{Status: p.Status, Position: p.Position, EtaSeconds: seconds(p.ETA), Paused: p.Paused,
		Receipt: p.Receipt}
	if !p.OpensAt.IsZero() && p.Seq == 0 && p.Status == waitroom.Waiting {
		t := p.OpensAt.UTC()
		out.OpensAt = &t
	}
	if p.Grant != nil {
		out.AdmissionToken = p.Grant.Token
		t := p.Grant.ExpiresAt.UTC()
		out.ExpiresAt = &t
		out.SeatMapURL = h.cfg.SeatMapURL(show)
	}
	return out
}

func (h *Handler) setAdmissionCookie(c *fiber.Ctx, show string, g *waitroom.Grant) {
	c.Cookie(&fiber.Cookie{Name: admission.CookieName(show), Value: g.Token, Path: "/", Expires: g.ExpiresAt,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: h.cfg.SecureCookies})
}

// presentedReceipt is the place receipt a fan sends: header first (API clients), else the cookie.
func presentedReceipt(c *fiber.Ctx, show string) string {
	if v := c.Get(admission.PlaceHeader); v != "" {
		return strings.Clone(v)
	}
	return strings.Clone(c.Cookies(admission.PlaceCookieName(show)))
}

// setReceiptCookie keeps a waiting fan's newest place receipt in an HttpOnly cookie sent back on re-joins.
func (h *Handler) setReceiptCookie(c *fiber.Ctx, show, receipt string) {
	if receipt == "" {
		return
	}
	c.Cookie(&fiber.Cookie{Name: admission.PlaceCookieName(show), Value: receipt, Path: "/queue/",
		MaxAge: int(token.ReceiptTTL.Seconds()), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: h.cfg.SecureCookies})
}

// entry reads what a join and a registration both carry: the show, the fan's token and the body's proofs.
func (h *Handler) entry(c *fiber.Ctx) (show string, r waitroom.JoinRequest, body joinBody, err error) {
	if show, err = showID(c); err != nil {
		return
	}
	user, raw, err := h.userToken(c)
	if err != nil {
		return
	}
	if body, err = readJoinBody(c); err != nil {
		return
	}
	return show, h.request(c, show, user, raw, body), body, nil
}

func (h *Handler) join(c *fiber.Ctx) error {
	show, r, body, err := h.entry(c)
	if err != nil {
		return err
	}
	if body.BypassCode != "" {
		return h.bypass(c, r, body.BypassCode)
	}
	p, err := h.svc.Enter(c.UserContext(), r)
	if err != nil {
		return err
	}
	return h.sendPlace(c, show, p)
}

func (h *Handler) status(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	user, raw, err := h.userToken(c)
	if err != nil {
		return err
	}
	r := h.request(c, show, user, raw, joinBody{})
	p, err := h.svc.StatusEnter(c.UserContext(), r, true)
	if err != nil {
		return err
	}
	p.Receipt = h.svc.Receipt(show, user, p, r.Receipt)
	return h.sendPlace(c, show, p)
}

// sendPlace answers join and status: personal, never cached; polling clients are told when to come back.
func (h *Handler) sendPlace(c *fiber.Ctx, show string, p waitroom.Place) error {
	out := h.toJSON(show, p)
	c.Set(fiber.HeaderCacheControl, "no-store")
	h.setReceiptCookie(c, show, p.Receipt)
	switch p.Status {
	case waitroom.Admitted:
		h.setAdmissionCookie(c, show, p.Grant)
	case waitroom.Waiting:
		h.turnHold(c, show, &out)
		retry := "2"
		if p.ETA > time.Minute {
			retry = "5"
		}
		c.Set(fiber.HeaderRetryAfter, retry)
	case waitroom.SoldOut:
		c.Set(fiber.HeaderRetryAfter, "10")
	}
	return c.JSON(out)
}

// turnHold adds the show's turn hold to a waiting fan's answer. The settings come from the gate's cache, which a
// join has just read: a setting that cannot be read leaves the figure out rather than failing the answer.
func (h *Handler) turnHold(c *fiber.Ctx, show string, out *placeJSON) {
	if h.cfg.Settings == nil {
		return
	}
	if st, err := h.cfg.Settings.Settings(c.UserContext(), show); err == nil {
		out.TurnHoldSeconds = st.TurnHoldSeconds
	}
}

func (h *Handler) fairness(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	f, err := h.svc.Fairness(c.UserContext(), show)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=5")
	return c.JSON(f)
}

func (h *Handler) jwks(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.JSON(h.cfg.Issuer.JWKS())
}
