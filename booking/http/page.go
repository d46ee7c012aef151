package http

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/pagekit"
)

// The fan pages: html/template files under page/ (layout.html plus one file per page, each defining "main"),
// and the stylesheet and JavaScript modules under page/assets/, all embedded, served beside the browser toolkit's
// modules (shared/pagekit: api.js, ui.js, stream.js, dom.js), which the pages import as "./api.js" and so on.
// Nothing is built: what is in the tree is what the browser gets.
//
//go:embed page/*.html page/assets/*
var pageFS embed.FS

// Page is what a page template gets: the layout reads Title, Nav and Scripts; the page's own "main" reads Data.
type Page struct {
	Title   string   // the document title, before " · flashseat"
	Nav     string   // the site-nav entry to mark current: "home", "bookings" or ""
	Scripts []string // JavaScript modules under /assets/ the page loads (file names, e.g. "seatmap.js")
	// ConnectSrc adds origins the page's scripts may call (Content-Security-Policy connect-src), such as a
	// payment gateway's tokenization API.
	ConnectSrc []string
	// ScriptSrc and FrameSrc add origins for a third party's script and frames (Stripe.js and its card fields).
	ScriptSrc, FrameSrc []string
	// Cache is the page's Cache-Control; empty is "no-cache" (a browser or CDN revalidates every time).
	Cache string
	Data  any
}

// Cache policies of pages and catalog reads, for browsers and a CDN in front of the edge.
const (
	// cachePublic: the same for every fan and briefly stale at worst (availability moves by the second): a CDN
	// serves it for a few seconds, then keeps serving the last copy while it revalidates in the background.
	cachePublic = "public, max-age=5, stale-while-revalidate=30"
	// cachePrivate: a page behind the waiting room's gate. A shared cache must never keep it, or it would hand
	// the seat map to fans the gate never saw.
	cachePrivate = "private, no-cache"
)

// site holds the parsed templates and the assets: the toolkit's modules (shared/pagekit) and the pages' own.
type site struct {
	pages  map[string]*template.Template // by file name without .html
	assets *pagekit.Assets
}

// fanSite is parsed once; the files are embedded, so a template that does not parse fails every test.
var fanSite = mustSite()

func mustSite() *site {
	s, err := loadSite(pageFS)
	if err != nil {
		panic(err)
	}
	return s
}

func loadSite(fsys fs.FS) (*site, error) {
	// The door's reader (gate/) and the vendored libraries (vendor/, their licences beside them) are served by
	// file name like the others.
	assets, err := pagekit.New("/assets/", fsys, "page/assets/*", "page/assets/gate/*.js", "page/assets/vendor/*.js")
	if err != nil {
		return nil, err
	}
	s := &site{pages: map[string]*template.Template{}, assets: assets}
	funcs := template.FuncMap{
		"asset": assets.URL,
		"money": money,
		"when":  when,
	}
	pages, err := fs.Glob(fsys, "page/*.html")
	if err != nil {
		return nil, err
	}
	for _, f := range pages {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(fsys, "page/layout.html", f)
		if err != nil {
			return nil, fmt.Errorf("page %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return s, nil
}

// render executes a page inside the layout and sends it. Pages are personal at most through their scripts'
// API calls, so the HTML itself may be cached briefly by the browser; a page whose HTML is personal sets its
// own Cache-Control after render. The Content-Security-Policy allows only our own scripts and styles.
func (s *Server) render(c *fiber.Ctx, status int, name string, p Page) error {
	t, ok := fanSite.pages[name]
	if !ok {
		return fmt.Errorf("http: no page %q", name)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		return fmt.Errorf("http: render %s: %w", name, err)
	}
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	if p.Cache == "" {
		p.Cache = "no-cache"
	}
	c.Set(fiber.HeaderCacheControl, p.Cache)
	pagekit.Secure(c, pagekit.Policy{Script: p.ScriptSrc, Connect: p.ConnectSrc,
		Frame: append([]string{"'self'"}, p.FrameSrc...)}.String())
	return c.Send(b.Bytes())
}

// assetHandler serves /assets/{version}/{file}: the pages' scripts and stylesheet, the toolkit's among them.
func (s *Server) assetHandler(c *fiber.Ctx) error {
	return fanSite.assets.Serve(c, c.Params("version"), c.Params("file"))
}

// wantsPage tells a browser navigating to a page (Accept lists text/html) from an API client, for the error
// renderer.
func wantsPage(c *fiber.Ctx) bool {
	return c.Method() == fiber.MethodGet && strings.Contains(c.Get(fiber.HeaderAccept), "text/html") &&
		!strings.HasPrefix(c.Path(), "/api/") && !strings.HasPrefix(c.Path(), "/admin/")
}
