package http_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom"
)

// TestPageServed: the waiting-room page is the same for every fan (cacheable), names its states, announces errors,
// and carries no token handling of its own: the fs_session and fs_adm_{show} cookies do that. Its script, stylesheet
// and proof-of-work worker are files of their own, so the page's policy allows no inline script or style. The page's
// behaviour in a browser is tested through the real edge and booking in edge/e2e (queue_page_test.go), since every
// state needs booking's show details and identity.
func TestPageServed(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 1, 10)
	res, b := s.do(t, "GET", "/queue/"+show, "", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.HasPrefix(res.Header.Get("Cache-Control"), "public") {
		t.Fatalf("page: %d %v", res.StatusCode, res.Header)
	}
	page := string(b)
	for _, want := range []string{`role="alert"`, `id="waiting"`, `id="opens"`, `id="paused"`, `id="soldout"`,
		`id="closed"`, `id="off"`, `id="human"`, `role="status"`, "Getting you a place in line…",
		`<a href="/bookings">My bookings</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "a background tab is fine") {
		t.Error("the page still says a background tab keeps the place: phones stop background tabs")
	}
	if regexp.MustCompile(`<script(\s[^>]*)?>[^<]`).MatchString(page) || strings.Contains(page, "<style") ||
		strings.Contains(page, " style=") {
		t.Error("the page has inline script or style, which its policy refuses")
	}

	// The assets the page names: versioned, immutable, typed, never sniffed.
	urls := map[string]string{}
	for _, m := range regexp.MustCompile(`(?:src|href|data-worker)="(/queue/assets/[0-9a-f]+/([a-z-]+\.(?:js|css)))"`).FindAllStringSubmatch(page, -1) {
		urls[m[2]] = m[1]
	}
	for name, ctype := range map[string]string{"queue.js": "text/javascript", "queue.css": "text/css",
		"pow-worker.js": "text/javascript"} {
		u, ok := urls[name]
		if !ok {
			t.Errorf("the page does not load %s: %v", name, urls)
			continue
		}
		res, b := s.do(t, "GET", u, "", "")
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) ||
			res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(b) < 100 {
			t.Errorf("%s: %d %v (%d bytes)", u, res.StatusCode, res.Header, len(b))
		}
		etag := res.Header.Get("ETag")
		if res, _ := s.do(t, "GET", u, "", "", "If-None-Match", etag); etag == "" || res.StatusCode != 304 {
			t.Errorf("%s again with its ETag %s: %d, want 304", u, etag, res.StatusCode)
		}
		// A page from before a release asks for its own version: it gets today's file, revalidated each time.
		old := strings.Replace(u, "/assets/", "/assets/0ld", 1)
		if res, _ := s.do(t, "GET", old, "", ""); res.StatusCode != 200 || res.Header.Get("Cache-Control") != "public, no-cache" {
			t.Errorf("%s: %d %q", old, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
	script := func() string {
		res, b := s.do(t, "GET", urls["queue.js"], "", "", "Accept-Encoding", "gzip")
		if res.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("queue.js to a client that takes gzip: %v", res.Header)
		}
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(plain)
	}()
	// The page's own modules, which queue.js imports beside the toolkit's, are served beside it, and read as one
	// script with it below; stream.js is the toolkit's follow of the stream, which the page's behaviour relies on.
	toolkit := map[string]bool{"api.js": true, "pow.js": true, "dom.js": true, "ui.js": true, "stream.js": true}
	var follow string
	for _, m := range regexp.MustCompile(`from "\./([a-z-]+\.js)"`).FindAllStringSubmatch(script, -1) {
		res, b := s.do(t, "GET", strings.Replace(urls["queue.js"], "queue.js", m[1], 1), "", "")
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("%s, which queue.js imports: %d %v", m[1], res.StatusCode, res.Header)
		}
		switch {
		case m[1] == "stream.js":
			follow = string(b)
		case !toolkit[m[1]]:
			script += "\n" + string(b)
		}
	}
	for _, want := range []string{"Reconnecting… your place is kept", `from "./api.js"`, `from "./pow.js"`,
		`from "./stream.js"`, `base + "/challenge"`, "humanToken", `"data-refusals"`, "w.humanKept", "w.fresh",
		"resume: true", "turnHoldSeconds"} {
		if !strings.Contains(script, want) {
			t.Errorf("the page's script lacks %q", want)
		}
	}
	for _, want := range []string{"visibilitychange", `"resume"`, "pageshow"} {
		if !strings.Contains(follow, want) {
			t.Errorf("stream.js lacks %q", want)
		}
	}
	// Its calls are the browser toolkit's, which sets the CSRF header in one place; the refusals' names come with
	// the page (booking/http's TestPagesNameProblemTypes keeps every page from naming one).
	for _, banned := range []string{"localStorage", "?admission=", "access_token", "Authorization", "innerHTML",
		"X-Requested-With"} {
		if strings.Contains(script, banned) {
			t.Errorf("the page's script uses %q", banned)
		}
	}
	for _, module := range []string{"api.js", "pow.js", "dom.js", "ui.js", "stream.js"} {
		u := strings.Replace(urls["queue.js"], "queue.js", module, 1)
		res, b := s.do(t, "GET", u, "", "")
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") ||
			res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("the toolkit's %s beside queue.js: %d %v", module, res.StatusCode, res.Header)
		}
		if module == "api.js" && !strings.Contains(string(b), `CSRF_HEADER = "X-Requested-With"`) {
			t.Error("the toolkit's api.js sets no CSRF header")
		}
	}
	if res, _ := s.do(t, "GET", strings.Replace(urls["queue.js"], "queue.js", "nope.js", 1), "", ""); res.StatusCode != 404 {
		t.Errorf("an unknown asset: %d, want 404", res.StatusCode)
	}
	if res, _ := s.do(t, "GET", "/queue/bad%20id", "", ""); res.StatusCode != 400 {
		t.Errorf("bad show id: %d", res.StatusCode)
	}
	// A show may be called "assets": its routes stay its own.
	if res, _ := s.do(t, "GET", "/queue/assets/status", "", ""); res.StatusCode != 401 {
		t.Errorf("status of a show called assets, without a user: %d, want 401", res.StatusCode)
	}
}

// TestPageSecurityHeaders: the page carries what every page of the platform does: a Content-Security-Policy that
// runs only its own files (and its worker), a framing guard and nosniff.
func TestPageSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	res, _ := s.do(t, "GET", "/queue/"+s.show(t, 1, 10), "", "")
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';",
		"worker-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "object-src 'none'", "frame-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy allows unsafe sources: %q", csp)
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
		"Referrer-Policy": "same-origin"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s: got %q, want %q", h, got, want)
		}
	}
}
