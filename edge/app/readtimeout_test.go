package app

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The edge's read timeouts, at their defaults: clients that never finish their headers are cut off at
// CLIENT_HEADER_TIMEOUT while everyone else is served, and a slow client within the limits is answered.
func TestClientReadTimeouts(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	headerTimeout := cfg.ReadHeaderTimeout
	up := echoUpstream(t)
	base := startEdge(t, map[string]string{"BOOKING_URL": up.URL})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host

	t.Run("stalled crowd", func(t *testing.T) {
		t.Parallel()
		testStalledCrowd(t, base, addr, headerTimeout)
	})
	// A byte every 100 ms: 27 bytes of headers in 2.7 s, past half the limit.
	t.Run("slow headers", func(t *testing.T) {
		t.Parallel()
		c := dialEdge(t, addr)
		trickle(t, c, "GET /slow HTTP/1.1\r\nHost: e\r\n\r\n", 100*time.Millisecond)
		wantAnswer(t, c, http.StatusCreated, "")
	})
	// The body has its own deadline from the end of the headers (CLIENT_READ_TIMEOUT): an upload that goes on past
	// the header timeout is still read whole.
	t.Run("slow body", func(t *testing.T) {
		t.Parallel()
		c := dialEdge(t, addr)
		body := "12345678"
		if _, err := io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: e\r\nContent-Type: text/plain\r\n"+
			"Content-Length: 8\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		trickle(t, c, body, headerTimeout*3/2/time.Duration(len(body)))
		if took := time.Since(start); took <= headerTimeout {
			t.Fatalf("body sent in %v, not past the header timeout %v", took, headerTimeout)
		}
		wantAnswer(t, c, http.StatusCreated, `"body":"12345678"`)
	})
}

// testStalledCrowd opens many connections that never finish their request, a few of them trickling a header byte
// now and then for ever (a slow-loris), and checks that a fan's request is answered meanwhile and that the edge
// closes every stalled connection at headerTimeout, give or take some slack for a loaded machine.
func testStalledCrowd(t *testing.T, base, addr string, headerTimeout time.Duration) {
	// Each connection is two descriptors in this process (both ends); the issue was seen with 800.
	n := 800
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && int(lim.Cur) < 2*n+512 {
		n = max(50, (int(lim.Cur)-512)/2)
	}
	const slack = 3 * time.Second // -race on two busy cores
	stalls := []string{
		"",                      // connects and sends nothing
		"GET /api/v1/events HT", // half a request line
		"GET /api/v1/events HTTP/1.1\r\nHost: edge\r\nUser-Agent: Mozilla/5.0\r\nX-Pad: ", // headers never ended
	}
	type closed struct {
		after    time.Duration
		byServer bool
		err      error
	}
	results := make(chan closed, n)
	conns := make([]net.Conn, 0, n)
	opened := make([]time.Time, 0, n)
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		opened = append(opened, time.Now())
		conns = append(conns, c)
		t.Cleanup(func() { c.Close() })
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			if i%100 == 99 { // a slow-loris: a byte of a header every 500 ms, never the blank line
				go func() {
					if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nX-A: "); err != nil {
						return
					}
					for {
						time.Sleep(500 * time.Millisecond)
						if _, err := c.Write([]byte("a")); err != nil {
							return
						}
					}
				}()
			} else if s := stalls[i%len(stalls)]; s != "" {
				if _, err := io.WriteString(c, s); err != nil {
					results <- closed{err: err}
					return
				}
			}
			_ = c.SetReadDeadline(opened[i].Add(headerTimeout + slack))
			_, err := io.Copy(io.Discard, c) // the edge's 408, if any, then its close
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			results <- closed{after: time.Since(opened[i]), byServer: !timedOut, err: err}
		})
	}

	// A fan's request, on a connection of its own, is answered while the crowd holds its connections.
	time.Sleep(200 * time.Millisecond)
	fan := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := fan.Get(base + "/api/v1/events")
	if err != nil {
		t.Fatalf("a fan's request during the stall: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a fan's request during the stall: status %d, want %d", resp.StatusCode, http.StatusCreated)
	}
	answered := time.Now()
	if took := answered.Sub(start); took > 2*time.Second {
		t.Errorf("a fan's request took %v during the stall", took)
	}

	wg.Wait()
	close(results)
	var cut, late, early int
	var worst time.Duration
	for r := range results {
		switch {
		case !r.byServer:
			late++
		case r.after < headerTimeout-500*time.Millisecond:
			early++
			t.Logf("closed after %v: %v", r.after, r.err)
		default:
			cut++
		}
		worst = max(worst, r.after)
	}
	if late > 0 || early > 0 {
		t.Fatalf("of %d stalled connections, %d still open at %v, %d closed before %v; want all closed at %v",
			n, late, headerTimeout+slack, early, headerTimeout, headerTimeout)
	}
	if first := opened[0].Add(headerTimeout - 500*time.Millisecond); answered.After(first) {
		t.Errorf("the fan was answered at %v, after the stalled connections began to close", answered.Sub(start))
	}
	t.Logf("%d stalled connections closed within %v of opening (header timeout %v)", cut, worst, headerTimeout)
}

// dialEdge opens a raw connection to the edge, closed at the end of the test.
func dialEdge(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// trickle writes s a byte at a time, every gap.
func trickle(t *testing.T, c net.Conn, s string, gap time.Duration) {
	t.Helper()
	for i := range len(s) {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			t.Fatalf("after %d of %d bytes: %v", i, len(s), err)
		}
		time.Sleep(gap)
	}
}

// wantAnswer reads the response on c and checks its status and that its body holds want.
func wantAnswer(t *testing.T, c net.Conn, status int, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || !strings.Contains(string(b), want) {
		t.Fatalf("status %d body %s, want %d with %s", resp.StatusCode, b, status, want)
	}
}
