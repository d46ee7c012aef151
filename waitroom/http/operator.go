package http

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/waitroom"
)

// Operator routes beyond the queue settings: a fan's standing, kicks, and the audit of every change.

// fanJSON is a fan's standing as an operator sees it: the place and, when admitted, the admission's id, when
// it was issued and when it expires (never the token itself).
type fanJSON struct {
	ShowID     string     `json:"showId"`
	UserID     string     `json:"userId"`
	Status     string     `json:"status"`
	Position   int64      `json:"position,omitempty"`
	EtaSeconds int64      `json:"etaSeconds"`
	OpensAt    *time.Time `json:"opensAt,omitempty"`
	Paused     bool       `json:"paused"`
	JTI        string     `json:"jti,omitempty"`
	IssuedAt   *time.Time `json:"issuedAt,omitempty"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
}

// fan answers GET /admin/v1/shows/{showId}/fans/{userId}: the fan's place in line or admission. Looking a fan
// up is not their heartbeat (waitroom.Service.Inspect).
func (h *Handler) fan(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	user := strings.Clone(c.Params("userId"))
	p, err := h.svc.Inspect(c.UserContext(), show, user)
	if err != nil {
		return err
	}
	out := fanJSON{ShowID: show, UserID: user, Status: string(p.Status), Position: p.Position,
		EtaSeconds: seconds(p.ETA), OpensAt: optTime(p.OpensAt), Paused: p.Paused}
	if p.Grant != nil {
		out.JTI, out.IssuedAt, out.ExpiresAt = p.Grant.JTI, optTime(p.Grant.IssuedAt), optTime(p.Grant.ExpiresAt)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// audit records an operator's change; the change is made, so a failure to record it is logged, not answered.
func (h *Handler) audit(c *fiber.Ctx, action, show string, old, now any) {
	h.auditAs(c, audit.Actor(c.Get(audit.OperatorHeader)), action, show, old, now)
}

// auditAs is audit for a change whose actor is not the request's operator (a fan spending a bypass code).
func (h *Handler) auditAs(c *fiber.Ctx, actor, action, show string, old, now any) {
	if h.cfg.Audit == nil {
		return
	}
	e := audit.Entry{Actor: actor, Action: action, ShowID: show}
	if old != nil {
		e.Old, _ = json.Marshal(old)
	}
	if now != nil {
		e.New, _ = json.Marshal(now)
	}
	if err := h.cfg.Audit.Record(c.UserContext(), e); err != nil {
		h.log.Error("waitroom: audit", "action", action, "show", show, "err", err,
			"requestId", string(c.Response().Header.Peek("X-Request-Id")))
	}
}

// kickJSON answers a kick: the admissions revoked.
type kickJSON struct {
	ShowID  string            `json:"showId"`
	Revoked []admission.Grant `json:"revoked"`
}

// adminShow authenticates an operator and reads the path's show id.
func (h *Handler) adminShow(c *fiber.Ctx) (string, error) {
	if err := h.admin(c); err != nil {
		return "", err
	}
	return showID(c)
}

func (h *Handler) kickAdmission(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	g, err := h.svc.Kick(c.UserContext(), show, strings.Clone(c.Params("jti")))
	if err != nil {
		return err
	}
	h.audit(c, "admission.revoke", show, g, map[string]any{"jti": g.JTI, "userId": g.UserID, "revoked": true})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(kickJSON{ShowID: show, Revoked: []admission.Grant{g}})
}

func (h *Handler) kickFan(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	user, err := url.PathUnescape(c.Params("userId"))
	if err != nil {
		return fmt.Errorf("%w: user id", waitroom.ErrInvalid)
	}
	gs, err := h.svc.KickUser(c.UserContext(), show, strings.Clone(user))
	if err != nil {
		return err
	}
	h.audit(c, "fan.revoke", show, map[string]any{"userId": user, "admissions": gs},
		map[string]any{"userId": user, "revoked": true})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(kickJSON{ShowID: show, Revoked: gs})
}
