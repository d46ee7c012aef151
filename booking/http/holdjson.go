package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/holdbody"
)

// decodeHold reads a hold request body as the edge's gate reads it, by holdbody.Decode; what it refuses is
// described as decode describes any body it refuses.
func decodeHold(c *fiber.Ctx) (holdbody.Request, error) {
	body := c.Request().Body()
	if header(c, headerContentEncoding) != "" {
		body = c.Body() // decoded by fiber, whose Body visits every header to learn whether to: only when it must
	}
	req, err := holdbody.Decode(body)
	return req, invalidBody(body, err)
}
