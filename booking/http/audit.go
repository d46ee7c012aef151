package http

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/audit"
)

// record writes an operator's change to the audit log: who (X-Operator, set by the console's edge; else "api"),
// what, on which show, the value before and after. The change is already made, so a failed write is logged, not
// returned: refusing the answer would not undo it.
func (s *Server) record(c *fiber.Ctx, action, showID string, old, now any) {
	if s.cfg.Audit == nil {
		return
	}
	o, err1 := json.Marshal(old)
	n, err2 := json.Marshal(now)
	e := audit.Entry{Actor: audit.Actor(c.Get(audit.OperatorHeader)), Action: action, ShowID: showID, Old: o, New: n}
	if err := s.cfg.Audit.Record(c.UserContext(), e); err1 != nil || err2 != nil || err != nil {
		s.log.ErrorContext(c.UserContext(), "audit log", "action", action, "show", showID, "err", err)
	}
}

// auditList answers GET /admin/v1/audit?showId=&limit=: the newest changes first, of one show or of all.
func (s *Server) auditList(c *fiber.Ctx) error {
	show := string([]byte(c.Query("showId")))
	if show != "" && !booking.ValidID(show) {
		return booking.Invalid("showId is not a show id")
	}
	limit := 0
	if q := c.Query("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > audit.MaxLimit {
			return booking.Invalid("limit must be a whole number from 1 to %d", audit.MaxLimit)
		}
		limit = n
	}
	entries, err := s.cfg.Audit.List(c.UserContext(), audit.Filter{ShowID: show, Limit: limit})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"entries": entries})
}
