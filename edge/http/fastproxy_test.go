package http

import (
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
