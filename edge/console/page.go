package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/problem"
)

//go:embed page/console.html page/console.js page/bots.js page/console.css
var pageFS embed.FS

var pageTmpl = template.Must(template.ParseFS(pageFS, "page/console.html"))

// assets are the page's script modules and stylesheet, served as they are embedded.
var assets = map[string]struct{ typ, file string }{
	"console.js":  {"text/javascript; charset=utf-8", "page/console.js"},
	"bots.js":     {"text/javascript; charset=utf-8", "page/bots.js"},
	"console.css": {"text/css; charset=utf-8", "page/console.css"},
}

// page serves the console: one document that shows the sign-in form or, with a session, the console itself
// (the script asks GET /admin/session which).
func (con *Console) page(c *fiber.Ctx) error {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, struct{ Title string }{"flashseat operator console"}); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	con.secureHeaders(c)
	return c.Send(b.Bytes())
}

func (con *Console) asset(c *fiber.Ctx) error {
	a, ok := assets[c.Params("name")]
	if !ok {
		return problem.New(http.StatusNotFound, problem.NotFound, "No such asset.")
	}
	body, err := pageFS.ReadFile(a.file)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, a.typ)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	con.secureHeaders(c)
	return c.Send(body)
}

// secureHeaders keep the console to its own origin: no framing (clickjacking a control), no scripts or
// connections elsewhere.
func (con *Console) secureHeaders(c *fiber.Ctx) {
	c.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("X-Content-Type-Options", "nosniff")
}
