package http

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// fanJSON is a fan's standing as an operator sees it: the place and, when admitted, the admission's id and
// expiry (never the token itself).
type fanJSON struct {
	ShowID     string     `json:"showId"`
	UserID     string     `json:"userId"`
	Status     string     `json:"status"`
	Position   int64      `json:"position,omitempty"`
	EtaSeconds int64      `json:"etaSeconds"`
	OpensAt    *time.Time `json:"opensAt,omitempty"`
	JTI        string     `json:"jti,omitempty"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
}

// fan answers GET /admin/v1/shows/{showId}/fans/{userId}: the fan's place in line or admission. Looking a fan
// up is not their heartbeat (waitroom.Service.Inspect).
func (h *Handler) fan(c *fiber.Ctx) error {
	if err := h.admin(c); err != nil {
		return err
	}
	show, err := showID(c)
	if err != nil {
		return err
	}
	user := strings.Clone(c.Params("userId"))
	p, err := h.svc.Inspect(c.UserContext(), show, user)
	if err != nil {
		return err
	}
	out := fanJSON{ShowID: show, UserID: user, Status: string(p.Status), Position: p.Position,
		EtaSeconds: seconds(p.ETA), OpensAt: optTime(p.OpensAt)}
	if p.Grant != nil {
		out.JTI, out.ExpiresAt = p.Grant.JTI, optTime(p.Grant.ExpiresAt)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}
