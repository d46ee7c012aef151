package http

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/waitroom"
)

// Bypass codes (waitroom/bypass.go): the operators' routes that issue, list and revoke them, and a fan's join
// presenting one. Every issue, revocation and use is audited; the audit log never holds a code, only its id.

// issueJSON is POST .../bypass-codes's body.
type issueJSON struct {
	Count     int       `json:"count"`
	Uses      int       `json:"uses"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Lane names the lane the codes' fans are in (one of the show's lanes; absent: the general lane).
	Lane string `json:"lane"`
}

// codesJSON answers the issue and the list.
type codesJSON struct {
	ShowID string                `json:"showId"`
	Codes  []waitroom.BypassCode `json:"codes"`
}

// issueCodes answers POST /admin/v1/shows/{showId}/bypass-codes {"count","uses","expiresAt"} with 201 and the
// codes, whose plain text appears nowhere else.
func (h *Handler) issueCodes(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	in := issueJSON{Count: 1, Uses: 1}
	if err := operatorJSON("", c.Body(), &in, errBadJSON,
		`the body must be a JSON object such as {"count":10,"uses":1,"expiresAt":"2026-12-31T23:59:00Z"}`); err != nil {
		return err
	}
	if in.ExpiresAt.IsZero() {
		return fmt.Errorf("%w: expiresAt is required (an RFC 3339 time)", errValidation)
	}
	actor := audit.Actor(c.Get(audit.OperatorHeader))
	codes, err := h.svc.IssueBypassCodes(c.UserContext(), show,
		waitroom.BypassRequest{Count: in.Count, Uses: in.Uses, ExpiresAt: in.ExpiresAt, By: actor, Lane: in.Lane}, time.Now())
	if errors.Is(err, waitroom.ErrInvalid) {
		return fmt.Errorf("%w: %v", errValidation, err) // the body's values, not the path's
	}
	if err != nil {
		return err
	}
	ids := make([]string, len(codes))
	for i, code := range codes {
		ids[i] = code.ID
	}
	h.audit(c, "bypass.issue", show, nil, map[string]any{"ids": ids, "uses": in.Uses, "expiresAt": codes[0].ExpiresAt,
		"lane": in.Lane})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(http.StatusCreated).JSON(codesJSON{ShowID: show, Codes: codes})
}

// listCodes answers GET /admin/v1/shows/{showId}/bypass-codes: every code of the show, newest first, with its
// uses (never its plain text).
func (h *Handler) listCodes(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	codes, err := h.svc.BypassCodes(c.UserContext(), show)
	if err != nil {
		return err
	}
	if codes == nil {
		codes = []waitroom.BypassCode{}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(codesJSON{ShowID: show, Codes: codes})
}

// revokeCode answers DELETE /admin/v1/shows/{showId}/bypass-codes/{code}, the code named by its id or by itself:
// it admits nobody from then on; admissions it gave stay.
func (h *Handler) revokeCode(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	code, err := url.PathUnescape(c.Params("code"))
	if err != nil || code == "" || len(code) > 64 {
		return fmt.Errorf("%w: a bypass code or its id", waitroom.ErrInvalid)
	}
	got, err := h.svc.RevokeBypassCode(c.UserContext(), show, strings.Clone(code))
	if err != nil {
		return err
	}
	h.audit(c, "bypass.revoke", show, map[string]any{"id": got.ID, "used": got.Used}, map[string]any{"id": got.ID, "revoked": true})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(got)
}

// bypass is a join presenting a bypass code: admitted at once, or a problem saying why the code admits nobody,
// after which the fan may join the line as anyone would. The code stands in for the proof of work: a join with
// a code never takes a place in line.
func (h *Handler) bypass(c *fiber.Ctx, r waitroom.JoinRequest, code string) error {
	p, used, err := h.svc.Bypass(c.UserContext(), r, code)
	if err != nil {
		return err
	}
	if used != nil {
		h.auditAs(c, "fan:"+r.User, "bypass.use", r.Show, map[string]any{"id": used.Code.ID, "used": used.Code.Used - 1},
			map[string]any{"id": used.Code.ID, "used": used.Code.Used, "userId": r.User, "jti": used.Grant.JTI})
	}
	return h.sendPlace(c, r.Show, p)
}
