package http

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
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
			rc.Request.Header.SetHost("edge.example")
			c := app.AcquireCtx(&rc)
			want, werr := p.target(c)
			var undo outgoingUndo
			gerr := p.fastTarget(c, &undo)
			var sent bytes.Buffer
			if gerr == nil {
				// What the HostClient writes: the request line and Host of the request changed in place.
				rc.Request.URI().DisablePathNormalizing = true
				bw := bufio.NewWriter(&sent)
				if err := rc.Request.Write(bw); err != nil {
					t.Fatal(err)
				}
				_ = bw.Flush()
			}
			var got fasthttp.Request
			_ = got.Read(bufio.NewReader(&sent))
			switch {
			case (gerr != nil) != (werr != nil):
				t.Errorf("%s %q: error %v, target's %v", base, uri, gerr, werr)
			case gerr == nil && string(got.Header.RequestURI()) != want.RequestURI():
				t.Errorf("%s %q: %q, target's %q", base, uri, got.Header.RequestURI(), want.RequestURI())
			case gerr == nil && string(got.Host()) != u.Host:
				t.Errorf("%s %q: host %q", base, uri, got.Host())
			}
			if gerr == nil {
				// Put back, the request is the client's again, as the server and the metrics read it.
				undo.apply(c)
				if string(rc.Request.Header.RequestURI()) != uri || string(rc.Request.Host()) != "edge.example" ||
					string(rc.Request.URI().Host()) != "edge.example" || rc.Request.UseHostHeader {
					t.Errorf("%s %q: put back as %q, host %q, URI host %q", base, uri, rc.Request.Header.RequestURI(),
						rc.Request.Host(), rc.Request.URI().Host())
				}
			}
			app.ReleaseCtx(c)
		}
	}
}

// The fast path sends the client's request itself upstream, changed in place: the upstream always gets HTTP/1.1
// and keeps its own connection's fate to itself, the client's connection stays as the client asked, and a HEAD's
// answer keeps the upstream's Content-Length without a body.
func TestFastPathConnections(t *testing.T) {
	t.Parallel()
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.Response.Header.Set("Server", "booking")
		c.Response.Header.Set(HeaderRequestID, "upstream-id")
		c.SetConnectionClose() // every answer closes the upstream's connection
		c.SetBodyString(string(c.Request.Header.Protocol()) + " " + string(c.Request.Header.Peek("Connection")))
	}}
	go func() { _ = up.Serve(upstream) }()
	t.Cleanup(func() { _ = up.Shutdown() })
	s := New(Config{
		Proxy: ProxyConfig{Target: &url.URL{Scheme: "http", Host: upstream.Addr().String()}, DialTimeout: time.Second,
			HeaderTimeout: 5 * time.Second, Timeout: 5 * time.Second, IdleConnTimeout: time.Minute},
		Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.DiscardHandler),
	})
	s.Forward()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(front) }()
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })

	exchange := func(conn net.Conn, br *bufio.Reader, raw string) *fasthttp.Response {
		t.Helper()
		if _, err := conn.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp := &fasthttp.Response{SkipBody: strings.HasPrefix(raw, "HEAD ")}
		if err := resp.Read(br); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		return resp
	}
	closed := func(conn net.Conn, br *bufio.Reader) bool {
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := br.ReadByte()
		return err == io.EOF
	}
	for _, tc := range []struct {
		name, raw string
		closes    bool // the client asked for its connection to be closed
	}{
		{"keep-alive", "GET /a HTTP/1.1\r\nHost: edge\r\n\r\n", false},
		{"HTTP/1.0", "GET /a HTTP/1.0\r\nHost: edge\r\n\r\n", true},
		{"HTTP/1.0 keep-alive", "GET /a HTTP/1.0\r\nHost: edge\r\nConnection: keep-alive\r\n\r\n", false},
		{"Connection: close", "GET /a HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n", true},
		{"HEAD", "HEAD /a HTTP/1.1\r\nHost: edge\r\n\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", front.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for i := range 2 {
				resp := exchange(conn, br, tc.raw)
				if resp.SkipBody {
					// The upstream's length of the body it would have sent, and none sent: the next answer
					// on the connection is read from its first byte.
					if resp.StatusCode() != 200 || resp.Header.ContentLength() != len("HTTP/1.1 ") {
						t.Fatalf("HEAD: status %d, Content-Length %d", resp.StatusCode(), resp.Header.ContentLength())
					}
				} else if got := string(resp.Body()); resp.StatusCode() != 200 || got != "HTTP/1.1 " {
					t.Fatalf("status %d, upstream saw %q, want HTTP/1.1 and no Connection", resp.StatusCode(), got)
				}
				if v := resp.Header.Peek("Server"); len(v) > 0 {
					t.Errorf("the upstream's Server %q reached the client", v)
				}
				if v := string(resp.Header.Peek(HeaderRequestID)); v == "" || v == "upstream-id" {
					t.Errorf("request id %q, want the edge's", v)
				}
				if tc.closes {
					if !closed(conn, br) {
						t.Error("the edge kept a connection the client asked to close")
					}
					return
				}
				if resp.ConnectionClose() {
					t.Fatalf("request %d: the upstream's Connection: close reached the client", i)
				}
			}
		})
	}
}
