package http

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

//go:embed page/seatmap.html
var seatMapHTML []byte

// seatMapPage serves the seat-map page: plain HTML and JavaScript, no external assets. The page reads the show
// id from its own path and does everything else through the public API, so it is the same for every show and
// cacheable.
func (s *Server) seatMapPage(c *fiber.Ctx) error {
	if _, err := pathID(c, "showId", "show"); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	c.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'")
	return c.Send(seatMapHTML)
}
