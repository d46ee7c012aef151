package http_test

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom"
)

// FuzzQueueRoutes throws arbitrary paths, tokens and bodies at the waiting room's routes: whatever comes in, the
// answer is never a 5xx and every error is a problem. Seeds live in testdata/fuzz; `go test` replays them, and
// `go test -fuzz FuzzQueueRoutes ./waitroom/http/` searches for more.
func FuzzQueueRoutes(f *testing.F) {
	f.Add(uint8(0), "", "", "", false)
	f.Add(uint8(1), "%7B%7D", "Bearer x.y.z", "", false)
	f.Add(uint8(2), "a/b/../c", "Bearer ", "", false)
	f.Add(uint8(3), "", "", `{"admitPerSecond":1e309}`, true)
	f.Add(uint8(3), "", "", `{"maxActive":-1,"enabled":"yes"}`, true)
	f.Add(uint8(4), "", "", "", true)
	f.Add(uint8(5), strings.Repeat("é", 100), "Basic Zm9v", "", false)
	f.Add(uint8(6), "x", "", "", false)
	s := newServer(f, waitroom.Options{Tick: time.Hour}, nil)
	known := s.show(f, 1, 10)
	f.Fuzz(func(t *testing.T, route uint8, show, auth, body string, admin bool) {
		if admin {
			show, auth = known, "Bearer "+adminToken
		}
		routes := []struct{ method, path string }{
			{"POST", "/queue/" + show + "/join"},
			{"GET", "/queue/" + show + "/status"},
			{"GET", "/queue/" + show + "/fairness"},
			{"PUT", "/admin/v1/shows/" + show + "/queue"},
			{"GET", "/admin/v1/shows/" + show + "/queue"},
			{"GET", "/queue/" + show},
			{"GET", "/.well-known/jwks.json"},
		}
		r := routes[int(route)%len(routes)]
		if strings.ContainsAny(r.path, " \r\n\t?#") || !strings.HasPrefix(r.path, "/") {
			return // not a request line an HTTP client can send
		}
		if _, err := url.Parse("http://x" + r.path); err != nil {
			return
		}
		req := httptest.NewRequest(r.method, "http://x"+r.path, strings.NewReader(body))
		if auth != "" && !strings.ContainsAny(auth, "\r\n") {
			req.Header.Set("Authorization", auth)
		}
		res, err := s.app.Test(req, 5000)
		if err != nil {
			return // fasthttp refused the raw request before any handler ran
		}
		defer res.Body.Close()
		if res.StatusCode >= 500 {
			t.Fatalf("%s %s (auth %q, body %q): %d", r.method, r.path, auth, body, res.StatusCode)
		}
		if res.StatusCode >= 400 && res.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s %s: %d with %q", r.method, r.path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}
