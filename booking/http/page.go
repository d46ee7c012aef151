package http

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// The fan pages: html/template files under page/ (layout.html plus one file per page, each defining "main"),
// and the stylesheet and JavaScript modules under page/assets/, all embedded. Nothing is built: what is in the
// tree is what the browser gets.
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

// site holds the parsed templates and the assets with their version.
type site struct {
	pages   map[string]*template.Template // by file name without .html
	assets  map[string]asset
	version string // a digest of every asset: in their URLs, so they can be cached for good
}

type asset struct {
	body, gz []byte
	ctype    string
	etag     string
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
	s := &site{pages: map[string]*template.Template{}, assets: map[string]asset{}}
	sum := sha256.New()
	files, err := fs.Glob(fsys, "page/assets/*")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		name := path.Base(f)
		fmt.Fprintf(sum, "%s\x00%d\x00", name, len(b))
		sum.Write(b)
		one := sha256.Sum256(b)
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		w.Write(b)
		w.Close()
		ctype := mime.TypeByExtension(path.Ext(name))
		if strings.HasSuffix(name, ".js") {
			ctype = "text/javascript; charset=utf-8"
		}
		s.assets[name] = asset{body: b, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(one[:8]) + `"`}
	}
	s.version = hex.EncodeToString(sum.Sum(nil)[:6])
	funcs := template.FuncMap{
		"asset": s.assetURL,
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

// assetURL is an asset's address: versioned, so that a new release's pages never get an old cached script.
func (s *site) assetURL(name string) (string, error) {
	if _, ok := s.assets[name]; !ok {
		return "", fmt.Errorf("no asset %q", name)
	}
	return "/assets/" + s.version + "/" + name, nil
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
	src := func(extra []string) string { return strings.Join(append([]string{"'self'"}, extra...), " ") }
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	if p.Cache == "" {
		p.Cache = "no-cache"
	}
	c.Set(fiber.HeaderCacheControl, p.Cache)
	c.Set("Content-Security-Policy", "default-src 'self'; script-src "+src(p.ScriptSrc)+"; style-src 'self'; img-src 'self' data:; "+
		"connect-src "+src(p.ConnectSrc)+"; frame-src "+src(p.FrameSrc)+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("X-Content-Type-Options", "nosniff")
	return c.Send(b.Bytes())
}

// assetHandler serves /assets/{version}/{file}. The current version's files are immutable for a year; another
// version (a page from before a deploy) gets today's file, revalidated each time.
func (s *Server) assetHandler(c *fiber.Ctx) error {
	a, ok := fanSite.assets[c.Params("file")]
	if !ok {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, a.ctype)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	c.Set(fiber.HeaderETag, a.etag)
	if c.Params("version") == fanSite.version {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "public, no-cache")
	}
	if c.Get(fiber.HeaderIfNoneMatch) == a.etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip") {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(a.gz)
	}
	return c.Send(a.body)
}

// wantsPage tells a browser navigating to a page (Accept lists text/html) from an API client, for the error
// renderer.
func wantsPage(c *fiber.Ctx) bool {
	return c.Method() == fiber.MethodGet && strings.Contains(c.Get(fiber.HeaderAccept), "text/html") &&
		!strings.HasPrefix(c.Path(), "/api/") && !strings.HasPrefix(c.Path(), "/admin/")
}
