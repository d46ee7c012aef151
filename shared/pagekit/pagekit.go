// Package pagekit is the browser toolkit every page of the platform shares, and the one way its files are served.
//
// js/ holds the JavaScript modules the booking pages, the operator console and the waiting room all build on:
// api.js (every call to the platform, the CSRF header, the problem types and refusal reasons the pages branch on,
// the guest session), pow.js with its Web Worker pow-worker.js (the proof of work a place or a guest session may
// need), ui.js (money, counts, times, announced errors), stream.js (an event stream that hands over to polling,
// its own or the page's) and dom.js (markup from script without HTML strings). A service serves them beside its
// own page files from one versioned directory, so a page's `import { api } from "./api.js"` resolves to the
// toolkit whichever service it came from.
// Nothing is built: what is in the tree is what the browser gets.
//
// Assets serves those files (typed, gzipped, revalidated by ETag, immutable under the current version) and Secure
// sets the headers every HTML page carries (headers.go), so the two services' three sites answer alike.
package pagekit

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/problem"
)

//go:embed js/*.js
var toolkit embed.FS

// File is one served file, with its gzip for clients that take it.
type File struct {
	body, gz []byte
	ctype    string
	etag     string
}

// NewFile prepares body for serving as ctype.
func NewFile(body []byte, ctype string) File {
	sum := sha256.Sum256(body)
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // a valid level never fails
	_, _ = w.Write(body)
	_ = w.Close()
	return File{body: body, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// Assets are a site's static files, the toolkit's and its own, under one version: a digest of them all, which
// their URLs carry, so a browser keeps them for good and a new release's page never runs an old script.
type Assets struct {
	prefix  string // the URL path they are served under, before the version: "/assets/"
	files   map[string]File
	version string
}

// New gathers the toolkit's modules and the files of fsys matching patterns (a service's own scripts, styles
// and workers; folders they match are skipped), to be served under prefix + version + "/" + name. Two files of
// one name, or a file of the service's named like a toolkit module, are an error: a page would get one or the
// other by accident.
func New(prefix string, fsys fs.FS, patterns ...string) (*Assets, error) {
	a := &Assets{prefix: prefix, files: map[string]File{}}
	own := map[string][]byte{}
	for _, p := range patterns {
		names, err := fs.Glob(fsys, p)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if st, err := fs.Stat(fsys, n); err != nil {
				return nil, err
			} else if st.IsDir() {
				continue // a folder of files a pattern of its own names
			}
			if _, dup := own[path.Base(n)]; dup {
				return nil, fmt.Errorf("pagekit: two files named %s: assets are served by name alone", path.Base(n))
			}
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				return nil, err
			}
			own[path.Base(n)] = b
		}
	}
	kit, err := fs.Glob(toolkit, "js/*.js")
	if err != nil {
		return nil, err
	}
	for _, n := range kit {
		name := path.Base(n)
		if _, ok := own[name]; ok {
			return nil, fmt.Errorf("pagekit: %s is a toolkit module; name the page's own file otherwise", name)
		}
		b, err := fs.ReadFile(toolkit, n)
		if err != nil {
			return nil, err
		}
		own[name] = b
	}
	names := make([]string, 0, len(own))
	for n := range own {
		names = append(names, n)
	}
	sort.Strings(names) // in order: the version is the same at every start
	sum := sha256.New()
	for _, n := range names {
		fmt.Fprintf(sum, "%s\x00%d\x00", n, len(own[n]))
		sum.Write(own[n])
		a.files[n] = NewFile(own[n], contentType(n))
	}
	a.version = hex.EncodeToString(sum.Sum(nil)[:6])
	return a, nil
}

// Must is New for files embedded in the binary, where an error is a bug every test meets.
func Must(prefix string, fsys fs.FS, patterns ...string) *Assets {
	a, err := New(prefix, fsys, patterns...)
	if err != nil {
		panic(err)
	}
	return a
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return mime.TypeByExtension(path.Ext(name))
}

// Version is the digest the files' URLs carry.
func (a *Assets) Version() string { return a.version }

// URL is a file's address, or an error for a file there is not (a template naming one fails to render).
func (a *Assets) URL(name string) (string, error) {
	if _, ok := a.files[name]; !ok {
		return "", fmt.Errorf("pagekit: no asset %q", name)
	}
	return a.prefix + a.version + "/" + name, nil
}

// Serve answers GET prefix/{version}/{name}. The current version's files never change, so they are cached for a
// year; another version (a page from before a release) gets today's file, revalidated each time.
func (a *Assets) Serve(c *fiber.Ctx, version, name string) error {
	f, ok := a.files[name]
	if !ok {
		return problem.New(http.StatusNotFound, problem.NotFound, "No such asset.")
	}
	cache := "public, no-cache"
	if version == a.version {
		cache = "public, max-age=31536000, immutable"
	}
	// A module's policy is its page's; a Web Worker's is its own response's: it may fetch nothing.
	c.Set("Content-Security-Policy", "default-src 'none'")
	return Send(c, f, cache)
}

// Send sends f with cache as its Cache-Control, gzipped to clients that take it, and 304 to a client that has it.
func Send(c *fiber.Ctx, f File, cache string) error {
	c.Set(fiber.HeaderContentType, f.ctype)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set(fiber.HeaderCacheControl, cache)
	c.Vary(fiber.HeaderAcceptEncoding) // added to what the page varies by (its language)
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
