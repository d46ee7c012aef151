package http

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pow"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
)

// The guard's routes and what a join brings for it (waitroom/guard.go explains the guard): the challenge, the
// join's body, the client's prefix and browser session, and the operators' figures and prefix blocks.

// BrowserCookie names the browser session: a random id the waiting room gives a browser on its first join, so
// one browser holds one place in a show's queue whatever identity it shows. HttpOnly: page scripts never see it.
const BrowserCookie = "fs_browser"

// browserTTL keeps the browser session as long as browsers let a cookie live.
const browserTTL = 400 * 24 * time.Hour

// joinBody is a join's optional body.
type joinBody struct {
	Proof      string `json:"proof"`      // a solved challenge: base64 of ALTCHA's JSON payload
	HumanToken string `json:"humanToken"` // the human check's response token
	BypassCode string `json:"bypassCode"` // an operator's bypass code: admitted at once, no proof needed (bypass.go)
}

// maxJoinBody bounds what a join's body may hold: a proof and a human-check token are under 4 KB.
const maxJoinBody = 8 << 10

func readJoinBody(c *fiber.Ctx) (joinBody, error) {
	var in joinBody
	b := c.Body()
	if len(strings.TrimSpace(string(b))) == 0 {
		return in, nil
	}
	if len(b) > maxJoinBody {
		return in, fmt.Errorf("%w: the join's body is larger than %d bytes", errBadJSON, maxJoinBody)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("%w: the join's body must be a JSON object such as {\"proof\":\"...\"}", errBadJSON)
	}
	return in, nil
}

// client describes who is asking, for the guard: their address prefix (per identity for an exempt address,
// which stands for many clients, as a load generator or a trusted health check does), their browser session
// (made here on a browser's first join), and whether their user token is an account's.
func (h *Handler) client(c *fiber.Ctx, user, raw string, browser bool) waitroom.Client {
	var addr netip.Addr
	if h.cfg.ClientAddr != nil {
		addr = h.cfg.ClientAddr(c)
	}
	cl := waitroom.Client{Prefix: admission.Prefix(addr), Account: !token.IsOwn(raw)}
	if addr.IsValid() {
		cl.RemoteIP = addr.String()
	}
	if h.cfg.Exempt != nil && addr.IsValid() && h.cfg.Exempt(addr) {
		cl.Prefix = "exempt:" + user
	}
	if browser {
		cl.Browser = h.browser(c)
	}
	return cl
}

// browser returns the request's browser session id, giving the browser one if it has none. API clients (a
// bearer token, no cookies) get none: the id is for browsers, whose fans share one cookie jar across identities.
func (h *Handler) browser(c *fiber.Ctx) string {
	if id := c.Cookies(BrowserCookie); len(id) == 32 && isHex(id) {
		return strings.Clone(id)
	}
	if c.Get(fiber.HeaderAuthorization) != "" {
		return ""
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	c.Cookie(&fiber.Cookie{Name: BrowserCookie, Value: id, Path: "/queue/", MaxAge: int(browserTTL.Seconds()),
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: h.cfg.SecureCookies})
	return id
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// request builds the guarded join request of a fan's join, status poll or stream.
func (h *Handler) request(c *fiber.Ctx, show, user, raw string, body joinBody) waitroom.JoinRequest {
	return waitroom.JoinRequest{Show: show, User: user, Receipt: presentedReceipt(c, show),
		Client: h.client(c, user, raw, true), Proof: body.Proof, Human: body.HumanToken}
}

// challengeJSON is a challenge as served: ALTCHA's fields at the top level (so an ALTCHA widget or library reads
// it as is), and the human check to render when the show asks for one.
type challengeJSON struct {
	*pow.Challenge
	HumanCheck any `json:"humanCheck,omitempty"`
}

// challenge answers GET /queue/{showId}/challenge: what this fan needs to earn a new place (200), or 204 when
// the show asks nothing. Each answer counts against the client's prefix: asking again costs as much as solving.
func (h *Handler) challenge(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	user, raw, err := h.userToken(c)
	if err != nil {
		return err
	}
	e, err := h.svc.Challenge(c.UserContext(), show, user, h.client(c, user, raw, false))
	c.Set(fiber.HeaderCacheControl, "no-store")
	if errors.Is(err, waitroom.ErrNoProofNeeded) {
		return c.SendStatus(http.StatusNoContent)
	}
	if err != nil {
		return err
	}
	return c.JSON(challengeJSON{Challenge: e.Challenge, HumanCheck: e.Human})
}

// ProofHeader carries a solved guest challenge on POST /api/v1/auth/guest (whose body is booking's).
const ProofHeader = "X-Proof"

// guestGate runs before POST /api/v1/auth/guest goes on to booking: a prefix minting more identities than a
// person would must bring a proof of work, and one past the limit is refused (waitroom/guest.go). Addresses that
// stand for many clients (Exempt) pass.
func (h *Handler) guestGate(c *fiber.Ctx) error {
	var addr netip.Addr
	if h.cfg.ClientAddr != nil {
		addr = h.cfg.ClientAddr(c)
	}
	if h.cfg.Exempt != nil && addr.IsValid() && h.cfg.Exempt(addr) {
		return c.Next()
	}
	if err := h.svc.MintGuest(c.UserContext(), admission.Prefix(addr), strings.Clone(c.Get(ProofHeader))); err != nil {
		return err
	}
	return c.Next()
}

// botFigures answers GET /admin/v1/shows/{showId}/bots: the show's bot-protection figures.
func (h *Handler) botFigures(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	f, err := h.svc.BotFigures(c.UserContext(), show)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(f)
}

// blockJSON is a prefix block's body.
type blockJSON struct {
	Prefix string `json:"prefix"`
}

// blockPrefix answers POST /admin/v1/shows/{showId}/blocked-prefixes {"prefix"}: its clients are suspects from
// then on (refused or shadowed as the show's settings say). Audited as a settings change.
func (h *Handler) blockPrefix(c *fiber.Ctx) error {
	return h.changeBlock(c, true)
}

// unblockPrefix answers DELETE /admin/v1/shows/{showId}/blocked-prefixes?prefix=... (a query, since an IPv6
// prefix holds a slash).
func (h *Handler) unblockPrefix(c *fiber.Ctx) error {
	return h.changeBlock(c, false)
}

func (h *Handler) changeBlock(c *fiber.Ctx, block bool) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	var raw string
	if block {
		var in blockJSON
		if err := operatorJSON("", c.Body(), &in, errBadJSON, `the body must be {"prefix": "203.0.113.7"}`); err != nil {
			return err
		}
		raw = in.Prefix
	} else {
		raw = strings.Clone(c.Query("prefix"))
	}
	prefix, err := admission.ParsePrefix(raw)
	if err != nil {
		return fmt.Errorf("%w: prefix: %v", errValidation, err)
	}
	old, now, err := h.svc.UpdateSettings(c.UserContext(), show, func(st admission.Settings) (admission.Settings, error) {
		list := st.Bot.Blocked()
		out := list[:0:0]
		for _, p := range list {
			if p != prefix {
				out = append(out, p)
			}
		}
		if block {
			out = append(out, prefix)
		}
		st.Bot.BlockedPrefixes = strings.Join(out, ",")
		if err := st.Validate(); err != nil {
			return st, fmt.Errorf("%w: %v", errValidation, err)
		}
		return st, nil
	})
	if err != nil {
		return err
	}
	if old != now {
		action := "queue.prefix.block"
		if !block {
			action = "queue.prefix.unblock"
		}
		h.audit(c, action, show, old.Bot.Blocked(), now.Bot.Blocked())
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"blockedPrefixes": append([]string{}, now.Bot.Blocked()...)})
}
