package http

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/edge"
)

// Many readers of one seat map at once: every one gets the whole answer, fewer fetches reach the upstream than
// there are readers, and once all are answered the proxy holds nothing for the seat map.
func TestSharedFetchesLeaveNothing(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int64
	const body = `{"showId":"s1","seats":[]}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		time.Sleep(5 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	target, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(context.Background(), ProxyConfig{Target: target, DialTimeout: time.Second,
		HeaderTimeout: 5 * time.Second, Timeout: 5 * time.Second, IdleConnTimeout: time.Minute, MaxIdleConns: 64},
		edge.TrustedProxies{}, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	t.Cleanup(p.Close)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/*", p.Handle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })

	const readers, each = 16, 10
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: readers}}
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range each {
				resp, err := hc.Get("http://" + ln.Addr().String() + "/api/v1/shows/s1/seats")
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != body || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("answer %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := fetches.Load(); n >= readers*each {
		t.Errorf("%d fetches for %d reads: none shared", n, readers*each)
	}
	p.collapse.mu.Lock()
	defer p.collapse.mu.Unlock()
	if n := len(p.collapse.slots); n != 0 {
		t.Errorf("%d seat maps still held after every read was answered", n)
	}
}
