package http

import (
	"embed"
	"html/template"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pagekit"
)

// The waiting-room page (page/): one HTML document, the same for every fan and every show (its script reads the
// show from the path), its script module and its stylesheet, served with the browser toolkit's modules
// (shared/pagekit: api.js, pow.js and its worker, dom.js, ui.js) by the edge itself, so the queue renders while
// booking is overloaded. Nothing is built: what is in the tree is what the browser gets. Everything personal comes
// from join, status and the stream, which are no-store.
//
//go:embed page/queue.html page/queue.js page/queue.css page/texts/*.json
var pageFS embed.FS

// queueSite is the page's template and its assets, under /queue/assets/{version}/{name}.
type queueSite struct {
	tmpl   *template.Template
	view   pageView // the assets' URLs; pagelang.go renders the page in each language
	assets *pagekit.Assets
}

// site is built once: the files are embedded, so a template that does not execute fails every test.
var site = mustSite()

func mustSite() *queueSite {
	s := &queueSite{assets: pagekit.Must("/queue/assets/", pageFS, "page/queue.js", "page/queue.css")}
	url := func(name string) string {
		u, err := s.assets.URL(name)
		if err != nil {
			panic(err)
		}
		return u
	}
	s.tmpl = template.Must(template.ParseFS(pageFS, "page/queue.html"))
	s.view = pageView{CSS: url("queue.css"), Script: url("queue.js"), Worker: url("pow-worker.js")}
	return s
}

// PageSources are the origins the page may use beyond its own, for its Content-Security-Policy: the human check's
// widget script, its frames, stylesheets and API calls (siteverify's Verifier.Sources). Frame lists every origin
// the page may frame: none without a human check.
type PageSources = pagekit.Policy

// pageCSP is the page's Content-Security-Policy: its own script, stylesheet and worker only (no inline script or
// style, so an injected one does not run), the human check's origins when one is configured, and no framing.
func pageCSP(s PageSources) string { return s.String() }

func (h *Handler) page(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	// The show's page settings from the gate's second-old copy; unreadable (a store down), the page is rendered
	// without them rather than not at all: the waiting room must load in an outage.
	page := admission.DefaultPage()
	if h.cfg.Settings != nil {
		if st, err := h.cfg.Settings.Settings(c.UserContext(), show); err == nil {
			page = st.Page
		}
	}
	pagekit.Secure(c, h.csp)
	// The same for every fan of a show who speaks the language: a CDN keeps it five seconds (an operator's new
	// message shows soon), and serves its last copy for a day when the origin fails, so a crowd arriving while the
	// platform restarts still gets the waiting room.
	c.Vary(fiber.HeaderAcceptLanguage)
	k := pageKey{lang: pageLanguage(c.Get(fiber.HeaderAcceptLanguage), page.Language), page: page}
	return pagekit.Send(c, rendered(k), "public, max-age=5, stale-if-error=86400")
}

// asset serves /queue/assets/{version}/{name}: the page's script and stylesheet, the toolkit's modules and the
// proof-of-work worker.
func (h *Handler) asset(c *fiber.Ctx) error {
	return site.assets.Serve(c, c.Params("version"), c.Params("name"))
}
