package http

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

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

// auditList answers GET /admin/v1/audit?showId=&since=&action=&limit=: the newest changes first, of one show or of
// all, made since a time, of some actions.
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
	f := audit.Filter{ShowID: show, Limit: limit}
	if q := c.Query("since"); q != "" {
		t, err := time.Parse(time.RFC3339, q)
		if err != nil {
			return booking.Invalid("since must be a date-time such as 2026-05-01T12:00:00Z")
		}
		f.Since = t
	}
	if q := c.Query("action"); q != "" {
		for _, a := range strings.Split(q, ",") {
			if a = strings.TrimSpace(a); a == "" || len(a) > 64 {
				return booking.Invalid("action must be a comma-separated list of action names")
			}
			f.Actions = append(f.Actions, strings.Clone(a))
		}
		if len(f.Actions) > 20 {
			return booking.Invalid("action may name at most 20 actions")
		}
	}
	entries, err := s.cfg.Audit.List(c.UserContext(), f)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"entries": entries})
}
