package http

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/problem"
)

// The waiting-room page (page/): one HTML document, the same for every fan and every show (its script reads the
// show from the path), its script, its stylesheet and the proof-of-work solver's Web Worker, all embedded and all
// served by the edge itself, so the queue renders while booking is overloaded. Nothing is built: what is in the tree
// is what the browser gets. Everything personal comes from join, status and the stream, which are no-store.
//
//go:embed page/queue.html page/queue.js page/queue.css page/pow-worker.js
var pageFS embed.FS

// pageAssets are the files under /queue/assets/{version}/{name}, with their types.
var pageAssets = map[string]string{
	"queue.js":      "text/javascript; charset=utf-8",
	"queue.css":     "text/css; charset=utf-8",
	"pow-worker.js": "text/javascript; charset=utf-8",
}

// file is one served file, and its gzip for clients that take it.
type file struct {
	body, gz []byte
	ctype    string
	etag     string
}

func newFile(body []byte, ctype string) file {
	sum := sha256.Sum256(body)
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // a valid level never fails
	_, _ = w.Write(body)
	_ = w.Close()
	return file{body: body, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// queueSite is the page and its assets. The assets' URLs carry a digest of them all, so they are cached for good
// and a new release's page never runs an old script.
type queueSite struct {
	page    file
	assets  map[string]file
	version string
}

// site is built once: the files are embedded, so a template that does not execute fails every test.
var site = mustSite()

func mustSite() *queueSite {
	s := &queueSite{assets: map[string]file{}}
	sum := sha256.New()
	for _, name := range []string{"pow-worker.js", "queue.css", "queue.js"} { // in order: the version is stable
		b, err := pageFS.ReadFile("page/" + name)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", name, len(b))
		sum.Write(b)
		s.assets[name] = newFile(b, pageAssets[name])
	}
	s.version = hex.EncodeToString(sum.Sum(nil)[:6])
	url := func(name string) string { return "/queue/assets/" + s.version + "/" + name }
	var b bytes.Buffer
	t := template.Must(template.ParseFS(pageFS, "page/queue.html"))
	if err := t.Execute(&b, struct{ CSS, Script, Worker string }{url("queue.css"), url("queue.js"), url("pow-worker.js")}); err != nil {
		panic(err)
	}
	s.page = newFile(b.Bytes(), fiber.MIMETextHTMLCharsetUTF8)
	return s
}

// PageSources are the origins the page may use beyond its own, for its Content-Security-Policy: the human check's
// widget script, its frames, stylesheets and API calls (siteverify's Verifier.Sources).
type PageSources struct {
	Script, Frame, Style, Connect []string
}

// pageCSP is the page's Content-Security-Policy: its own script, stylesheet and worker only (no inline script or
// style, so an injected one does not run), the human check's origins when one is configured, and no framing.
func pageCSP(s PageSources) string {
	src := func(extra []string) string { return strings.Join(append([]string{"'self'"}, extra...), " ") }
	frame := "'none'"
	if len(s.Frame) > 0 {
		frame = strings.Join(s.Frame, " ")
	}
	return "default-src 'self'; script-src " + src(s.Script) + "; style-src " + src(s.Style) +
		"; img-src 'self' data:; connect-src " + src(s.Connect) + "; frame-src " + frame +
		"; worker-src 'self'; object-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

func (h *Handler) page(c *fiber.Ctx) error {
	if _, err := showID(c); err != nil {
		return err
	}
	c.Set("Content-Security-Policy", h.csp)
	c.Set("X-Frame-Options", "DENY") // frame-ancestors' word for browsers that predate it
	c.Set("Referrer-Policy", "same-origin")
	// The same for every fan and show: a CDN keeps it five minutes, and serves its last copy for a day when the
	// origin fails, so a crowd arriving while the platform restarts still gets the waiting room.
	return sendFile(c, site.page, "public, max-age=300, stale-if-error=86400")
}

// asset serves /queue/assets/{version}/{name}. The current version's files never change, so they are cached for a
// year; a page from before a release (another version) gets today's file, revalidated each time.
func (h *Handler) asset(c *fiber.Ctx) error {
	f, ok := site.assets[c.Params("name")]
	if !ok {
		return problem.New(http.StatusNotFound, problem.NotFound, "No such asset.")
	}
	cache := "public, no-cache"
	if c.Params("version") == site.version {
		cache = "public, max-age=31536000, immutable"
	}
	// The worker's own policy (a worker's comes from its response): it hashes, and may fetch nothing.
	c.Set("Content-Security-Policy", "default-src 'none'")
	return sendFile(c, f, cache)
}

// sendFile sends f, gzipped to clients that take it, and 304 to a client that has it.
func sendFile(c *fiber.Ctx, f file, cache string) error {
	c.Set(fiber.HeaderContentType, f.ctype)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set(fiber.HeaderCacheControl, cache)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	c.Set(fiber.HeaderETag, f.etag)
	if c.Get(fiber.HeaderIfNoneMatch) == f.etag {
		return c.SendStatus(http.StatusNotModified)
	}
	if strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip") {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(f.gz)
	}
	return c.Send(f.body)
}
