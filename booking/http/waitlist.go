package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
)

// The waitlist's part of the error table (see codes).
func init() {
	codes = append(codes, code{booking.ErrNotSoldOut, fiber.StatusConflict, "not-sold-out"})
}

func (s *Server) waitlistRoutes(v1 fiber.Router) {
	if s.cfg.Waitlist == nil {
		return
	}
	v1.Post("/shows/:showId/waitlist", s.RequireUser, s.joinWaitlist)
}

// joinWaitlist answers 201 {"position","seats","joinedAt"}: the fan's place on a sold-out show's waitlist.
func (s *Server) joinWaitlist(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	var req struct {
		Seats *int `json:"seats"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Seats == nil {
		return booking.Invalid("seats is required")
	}
	e, err := s.cfg.Waitlist.Join(c.UserContext(), id, UserID(c), *req.Seats)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"showId": e.ShowID, "position": e.Position,
		"seats": e.Seats, "joinedAt": e.JoinedAt.UTC().Format("2006-01-02T15:04:05Z07:00")})
}
