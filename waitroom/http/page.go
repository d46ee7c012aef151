package http

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// pageHTML is the waiting-room page: plain HTML and JavaScript, no external assets. It is the same for every fan
// and every show (the script reads the show from the path), so a CDN may cache it; everything personal comes
// from join and the stream, which are no-store.
//
//go:embed page.html
var pageHTML []byte

func (h *Handler) page(c *fiber.Ctx) error {
	if _, err := showID(c); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	// The same for every fan and show: a CDN keeps it five minutes, and serves its last copy for a day when the
	// origin fails, so a crowd arriving while the platform restarts still gets the waiting room.
	c.Set(fiber.HeaderCacheControl, "public, max-age=300, stale-if-error=86400")
	return c.Send(pageHTML)
}
