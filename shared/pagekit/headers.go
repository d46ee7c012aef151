package pagekit

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Policy is a page's Content-Security-Policy: its own scripts, styles, workers and connections, plus the origins
// a page names beyond its own (a payment gateway's script and frames, a human check's widget). No inline script
// or style ever runs, no plugin loads, and no other site may frame the page (clickjacking a button).
type Policy struct {
	Script, Style, Connect []string // origins beyond 'self'
	Frame                  []string // every origin the page may frame ('self' included when it frames its own); none: 'none'
}

// String is the header's value.
func (p Policy) String() string {
	src := func(extra []string) string { return strings.Join(append([]string{"'self'"}, extra...), " ") }
	frame := "'none'"
	if len(p.Frame) > 0 {
		frame = strings.Join(p.Frame, " ")
	}
	return "default-src 'self'; script-src " + src(p.Script) + "; style-src " + src(p.Style) +
		"; img-src 'self' data:; connect-src " + src(p.Connect) + "; frame-src " + frame +
		"; worker-src 'self'; object-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

// Secure sets the headers every HTML page of the platform carries: its policy (csp, Policy.String's), the
// framing guard for browsers that predate frame-ancestors, no sniffing, and no full URL leaked to other sites.
func Secure(c *fiber.Ctx, csp string) {
	c.Set("Content-Security-Policy", csp)
	c.Set("X-Frame-Options", "DENY")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "same-origin")
}
