package http

import (
	"github.com/gofiber/fiber/v2"
)

// record writes an operator change to the audit log.
func (s *Server) record(c *fiber.Ctx, action, showID string, old, now any) {
}
