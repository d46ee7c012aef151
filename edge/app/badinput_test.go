package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
)

// No input, however malformed, gets a 5xx from the edge. The upstream here answers everything 201, so any 5xx
// would be the edge's own; and with the queue on for the show, the gate parses every one of these.
func TestBadInputNever5xx(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	show := newShow(t, rdb)
	s := admission.DefaultSettings()
	s.Enabled = true
	admissiontest.SetSettings(t, rdb, show, s)
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "BODY_LIMIT": "4096"})
	addr := strings.TrimPrefix(edge, "http://")

	big := strings.Repeat("x", 10000)
	holdBody := `{"showId":"` + show + `","showId":{"nested":[1,2,3]},"seatIds":null}`
	raws := []string{
		"FOO / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /%00 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://evil.example/x HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET //evil.example/x HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + big + "\r\n\r\n",
		"POST /api/v1/bookings/hold HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("{", 20000),
		"POST /api/v1/bookings/hold HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{\"sho",
		"POST /api/v1/bookings/hold HTTP/1.1\r\nHost: x\r\nContent-Length: " + fmt.Sprint(len(holdBody)) +
			"\r\n\r\n" + holdBody,
		"POST /api/v1/bookings/hold HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"POST /api/v1/bookings/hold HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST /api/v1/bookings/b1/pay HTTP/1.1\r\nHost: x\r\nX-Admission-Token: " + big[:3000] + "\r\nContent-Length: 0\r\n\r\n",
		"POST /api/v1/bookings/b1/pay HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a.b.c\r\nX-Admission-Token: eyJhbGciOiJub25lIn0.eyJzaG93IjoieCJ9.\r\nContent-Length: 0\r\n\r\n",
		"GET /api/v1/shows/" + show + "/seats HTTP/1.1\r\nHost: x\r\nCookie: " + admission.CookieName(show) + "=%%%\r\n\r\n",
		"GET /api/v1/shows/" + show + "/seats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\nX-Admission-Token: ..\r\n\r\n",
		"GET /api/v1/shows/%2e%2e/seats HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /shows/ HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\n\r\n",
		"GET / HTTP/1.1\r\n" + strings.Repeat("X-A: b\r\n", 2000) + "\r\n",
		"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
		"garbage\r\n\r\n",
	}
	for i, raw := range raws {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			status, head := rawRequest(t, addr, raw)
			if status >= 500 {
				t.Fatalf("%q -> %d\n%s", trunc(raw), status, head)
			}
		})
	}

	// Through a normal client, every error the edge produces is a problem.
	resp, body := do(t, "POST", edge+"/api/v1/bookings/hold", strings.Repeat("a", 5000), nil)
	wantProblem(t, resp, body, http.StatusRequestEntityTooLarge, "payload-too-large")
}

// rawRequest writes raw on a fresh connection and returns the status of the answer (0 when the edge closed the
// connection without one, which is not a 5xx).
func rawRequest(t *testing.T, addr, raw string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		return 0, ""
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Status + "\n" + string(b)
}

func trunc(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
