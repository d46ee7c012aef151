package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/problem"
)

// TestOversizedHeaderIs431: a request whose headers are larger than the edge reads (a 1 MB X-Proof on a join,
// any other header likewise) is answered 431 with a problem, never a reset connection the client cannot tell from
// an outage.
func TestOversizedHeaderIs431(t *testing.T) {
	t.Parallel()
	p := start(t, nil)
	for _, tc := range []struct {
		name, method, path, header string
		size                       int
	}{
		{"a proof on a join", "POST", "/queue/" + p.show + "/join", "X-Proof", 1 << 20},
		{"a proof on a guest sign-up", "POST", "/api/v1/auth/guest", "X-Proof", 1 << 20},
		{"a proof of 64 KB", "POST", "/queue/" + p.show + "/join", "X-Proof", 64 << 10},
		{"a proof of 16 KB", "POST", "/queue/" + p.show + "/join", "X-Proof", 16 << 10},
		{"any header", "GET", "/api/v1/shows/" + p.show, "X-Anything", 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, p.edge+tc.path, nil)
			req.Header.Set(tc.header, strings.Repeat("a", tc.size))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != problem.ContentType ||
				!strings.Contains(string(b), problem.TypeBase+problem.HeadersTooLarge) {
				t.Fatalf("got %d %s %s, want a 431 problem", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		})
	}
}

// TestOversizedHeaderIs431WrittenFirst: a client that sends its whole request before it reads (as simple clients,
// scripts and many proxies do), over a link slower than the edge's answer, still reads the 431: the edge reads
// what the client goes on sending after the answer, up to a bound, rather than closing on unread bytes, which
// resets the connection and loses the answer.
func TestOversizedHeaderIs431WrittenFirst(t *testing.T) {
	t.Parallel()
	p := start(t, nil)
	u, _ := url.Parse(p.edgeDirect)
	for _, size := range []int{64 << 10, 1 << 20} {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		req := "POST /queue/" + p.show + "/join HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\n" +
			"Content-Length: 2\r\nX-Proof: " + strings.Repeat("a", size) + "\r\n\r\n{}"
		// In pieces, with pauses: the edge has answered and would have closed long before the last piece.
		for rest := req; rest != ""; {
			n := min(len(rest), 32<<10)
			if _, err := io.WriteString(conn, rest[:n]); err != nil {
				t.Fatalf("%d bytes: the edge reset the connection after %d: %v", size, len(req)-len(rest), err)
			}
			rest = rest[n:]
			time.Sleep(5 * time.Millisecond)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%d bytes: no answer: %v", size, err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Fatalf("%d bytes: got %d %s %s, want a 431 problem", size, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
}
