package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/holdbody"
)

// decodeHold reads a hold request body as the edge's gate reads it (shared/holdbody): the plain shape by hand,
// anything else, malformed input included, through decode (encoding/json), whose answers the hand-written reader
// never contradicts (holdbody's fuzz test).
func decodeHold(c *fiber.Ctx) (holdbody.Request, error) {
	body := c.Request().Body()
	if header(c, headerContentEncoding) != "" {
		body = c.Body() // decoded by fiber, whose Body visits every header to learn whether to: only when it must
	}
	if req, ok := holdbody.Parse(body); ok {
		return req, nil
	}
	var req holdbody.Request
	err := decode(c, &req)
	return req, err
}
