package pagekit_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/pagekit"
	"github.com/flashseat/flashseat/shared/problem"
)

func serve(t *testing.T, a *pagekit.Assets) *fiber.App {
	t.Helper()
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		p, ok := err.(*problem.Problem)
		if !ok {
			t.Errorf("an error that is not a problem: %v", err)
			return c.SendStatus(500)
		}
		return c.Status(p.Status).SendString(p.Type)
	}})
	app.Get("/a/:version/:name", func(c *fiber.Ctx) error { return a.Serve(c, c.Params("version"), c.Params("name")) })
	return app
}

func get(t *testing.T, app *fiber.App, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestAssets: a site's own files and the toolkit's modules are served under one version, typed, never sniffed,
// immutable under the current version and revalidated under another, gzipped to those who take it, 304 to a
// client that has the file, and a problem 404 for a file there is not.
func TestAssets(t *testing.T) {
	t.Parallel()
	own := fstest.MapFS{
		"page/app.js":   {Data: []byte(`import { api } from "./api.js"; api("GET", "/x");` + strings.Repeat(" ", 200))},
		"page/site.css": {Data: []byte("body { margin: 0 }")},
		"page/note.txt": {Data: []byte("not matched")},
	}
	a, err := pagekit.New("/a/", own, "page/*.js", "page/*.css")
	if err != nil {
		t.Fatal(err)
	}
	app := serve(t, a)
	for name, ctype := range map[string]string{"app.js": "text/javascript; charset=utf-8", "site.css": "text/css; charset=utf-8",
		"api.js": "text/javascript; charset=utf-8", "dom.js": "text/javascript; charset=utf-8",
		"ui.js": "text/javascript; charset=utf-8", "stream.js": "text/javascript; charset=utf-8"} {
		u, err := a.URL(name)
		if err != nil || u != "/a/"+a.Version()+"/"+name {
			t.Fatalf("URL(%s) = %q, %v", name, u, err)
		}
		res, body := get(t, app, u)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != ctype || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(body) == 0 ||
			res.Header.Get("Content-Security-Policy") != "default-src 'none'" {
			t.Errorf("%s: %d %v", u, res.StatusCode, res.Header)
		}
		if res, _ := get(t, app, u, "If-None-Match", res.Header.Get("ETag")); res.StatusCode != 304 {
			t.Errorf("%s with its ETag: %d, want 304", u, res.StatusCode)
		}
		if res, _ := get(t, app, "/a/0ld/"+name); res.StatusCode != 200 || res.Header.Get("Cache-Control") != "public, no-cache" {
			t.Errorf("%s under another version: %d %q", name, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
	u, _ := a.URL("app.js")
	res, body := get(t, app, u, "Accept-Encoding", "gzip")
	if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: %v", res.Header)
	}
	r, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(r); !bytes.Equal(plain, own["page/app.js"].Data) {
		t.Errorf("gunzipped app.js = %q", plain)
	}
	if res, body := get(t, app, "/a/"+a.Version()+"/note.txt"); res.StatusCode != 404 || string(body) != problem.TypeBase+problem.NotFound {
		t.Errorf("a file not served: %d %s", res.StatusCode, body)
	}
	if _, err := a.URL("nope.js"); err == nil {
		t.Error("URL of a file there is not: no error")
	}

	// Another file changes the version, so no browser keeps the old one under the new pages.
	own["page/app.js"] = &fstest.MapFile{Data: []byte("changed")}
	b, err := pagekit.New("/a/", own, "page/*.js", "page/*.css")
	if err != nil || b.Version() == a.Version() {
		t.Errorf("version after a change: %q, before %q (%v)", b.Version(), a.Version(), err)
	}
}

// TestAssetsRefuseToolkitNames: a page file named like a toolkit module would shadow it (or be shadowed), so a
// page could get either; that is refused at start.
func TestAssetsRefuseToolkitNames(t *testing.T) {
	t.Parallel()
	if _, err := pagekit.New("/a/", fstest.MapFS{"page/api.js": {Data: []byte("x")}}, "page/*.js"); err == nil {
		t.Fatal("a page's own api.js: no error")
	}
}

// TestAssetsInFolders: a pattern matching a folder skips it (its files come by a pattern of their own), and two
// files of one name in two folders are an error, since both would be served at one URL.
func TestAssetsInFolders(t *testing.T) {
	t.Parallel()
	own := fstest.MapFS{"page/app.js": {Data: []byte("a")}, "page/gate/check.js": {Data: []byte("c")},
		"page/vendor/lib.js": {Data: []byte("l")}, "page/vendor/LICENSE": {Data: []byte("MIT")}}
	a, err := pagekit.New("/a/", own, "page/*", "page/gate/*.js", "page/vendor/*.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"app.js", "check.js", "lib.js"} {
		if _, err := a.URL(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := a.URL("LICENSE"); err == nil {
		t.Error("a file no pattern names is served")
	}
	own["page/vendor/check.js"] = &fstest.MapFile{Data: []byte("other")}
	if _, err := pagekit.New("/a/", own, "page/*", "page/gate/*.js", "page/vendor/*.js"); err == nil {
		t.Error("two check.js accepted")
	}
}

// TestPolicy: a page's policy runs only its own files and the origins it names, and frames nothing unless told.
func TestPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		p         pagekit.Policy
		want, not []string
	}{
		{"own files only", pagekit.Policy{},
			[]string{"default-src 'self';", "script-src 'self';", "style-src 'self';", "connect-src 'self';", "frame-src 'none';",
				"worker-src 'self';", "object-src 'none';", "frame-ancestors 'none';", "base-uri 'none'"},
			[]string{"unsafe-inline", "unsafe-eval"}},
		{"a gateway", pagekit.Policy{Script: []string{"https://js.stripe.com"}, Connect: []string{"http://pay:1"},
			Frame: []string{"'self'", "https://js.stripe.com"}},
			[]string{"script-src 'self' https://js.stripe.com;", "connect-src 'self' http://pay:1;", "frame-src 'self' https://js.stripe.com;"},
			[]string{"frame-src 'none'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q has %q", got, n)
				}
			}
		})
	}
}
