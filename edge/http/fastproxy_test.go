package http

import (
	"net/url"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Requests that may be answered with an event stream must take the Transport path, however they are spelled.
func TestMayStream(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	for _, tc := range []struct {
		name, method, uri, accept string
		want                      bool
	}{
		{"seat map", "GET", "/api/v1/shows/s1/seats", "application/json", false},
		{"hold", "POST", "/api/v1/bookings/hold", "", false},
		{"seat stream", "GET", "/api/v1/shows/s1/seats/stream", "", true},
		{"seat stream, trailing slash", "GET", "/api/v1/shows/s1/seats/stream/", "", true},
		{"seat stream, upper case", "GET", "/api/v1/shows/s1/seats/STREAM", "", true},
		{"seat stream, encoded", "GET", "/api/v1/shows/s1/seats/%73tream", "", true},
		{"seat stream with a query", "GET", "/api/v1/shows/s1/seats/stream?x=1", "", true},
		{"stream only in the query", "GET", "/api/v1/shows/s1/seats?stream=1", "", false},
		{"Accept in upper case", "GET", "/api/v1/x", "TEXT/EVENT-STREAM", true},
		{"asks for an event stream", "GET", "/api/v1/anything", "text/event-stream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rc fasthttp.RequestCtx
			rc.Request.Header.SetMethod(tc.method)
			rc.Request.SetRequestURI(tc.uri)
			if tc.accept != "" {
				rc.Request.Header.Set("Accept", tc.accept)
			}
			c := app.AcquireCtx(&rc)
			defer app.ReleaseCtx(c)
			if got := mayStream(c); got != tc.want {
				t.Errorf("mayStream(%s %s, Accept %q) = %v, want %v", tc.method, tc.uri, tc.accept, got, tc.want)
			}
		})
	}
}

// The fast path's upstream target is the one target builds, however the path is spelled, with or without a path
// under the upstream's URL.
func TestFastTargetAsTarget(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	for _, base := range []string{"http://127.0.0.1:8081", "http://127.0.0.1:8081/base/"} {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		p := &Proxy{cfg: ProxyConfig{Target: u}}
		for _, uri := range []string{
			"/api/v1/shows/s1/seats", "/api/v1/shows/s1/seats?x=1&y=%20", "/a%20b", "/a%2Fb", "/a+b;c=d,e",
			"/!$&'()*+,;=:@~._-", "//twice", "/trailing/", "/caf\xc3\xa9", "/a b", "/%zz", "/q?", "/a[1]",
		} {
			var rc fasthttp.RequestCtx
			rc.Request.Header.SetMethod("GET")
			rc.Request.SetRequestURI(uri)
			c := app.AcquireCtx(&rc)
			want, werr := p.target(c)
			var req fasthttp.Request
			gerr := p.fastTarget(c, &req)
			switch {
			case (gerr != nil) != (werr != nil):
				t.Errorf("%s %q: error %v, target's %v", base, uri, gerr, werr)
			case gerr == nil && string(req.Header.RequestURI()) != want.RequestURI():
				t.Errorf("%s %q: %q, target's %q", base, uri, req.Header.RequestURI(), want.RequestURI())
			case gerr == nil && string(req.Host()) != u.Host:
				t.Errorf("%s %q: host %q", base, uri, req.Host())
			}
			app.ReleaseCtx(c)
		}
	}
}
