package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/pagekit"
	"github.com/flashseat/flashseat/waitroom"
)

// The console's page: console.html, its entry module console.js, one module per panel (shows.js, tuning.js,
// bots.js, codes.js with the queue page's form in queuepage.js, fans.js, catalog.js, reports.js, audit.js, webhooks.js;
// console.js says how to add one; picker.js is the show select of the panels that work on one show) and its
// stylesheet, served beside the browser toolkit's modules (shared/pagekit), which the panels import as "./api.js",
// "./dom.js" and so on.
//
//go:embed page/console.html page/report.html page/*.js page/*.css
var pageFS embed.FS

// assets are the page's modules and stylesheet with the toolkit's, under /admin/assets/{version}/{name}.
var assets = pagekit.Must("/admin/assets/", pageFS, "page/*.js", "page/*.css")

var pageTmpl = template.Must(template.New("console.html").Funcs(template.FuncMap{"asset": assets.URL}).
	ParseFS(pageFS, "page/console.html"))

// reasonsJSON is what each of waitroom's refusals says of the clients refused, by reason, in the operator's
// words (the table's Means), for the Bots panel: the <html> element's data-reasons.
var reasonsJSON = func() string {
	m := make(map[string]string, len(waitroom.Reasons))
	for _, r := range waitroom.Reasons {
		m[r.Name] = r.Means
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return string(b)
}()

// pagePolicy keeps the console to its own origin: no framing (clickjacking a control), no scripts or connections
// elsewhere.
var pagePolicy = pagekit.Policy{}.String()

// page serves the console: one document that shows the sign-in form or, with a session, the console itself
// (the script asks GET /admin/session which).
func (con *Console) page(c *fiber.Ctx) error {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, struct{ Title, Reasons string }{"flashseat operator console", reasonsJSON}); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	pagekit.Secure(c, pagePolicy)
	return c.Send(b.Bytes())
}

func (con *Console) asset(c *fiber.Ctx) error {
	return assets.Serve(c, c.Params("version"), c.Params("name"))
}
