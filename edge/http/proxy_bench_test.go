package http

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/edge/ratelimit"
	"github.com/flashseat/flashseat/shared/token"
)

// BenchmarkProxyHold is a hold through the edge's server alone, against an upstream that answers at once: what
// the edge's own work (request id, metrics, the user token, the per-user limit, forwarding both ways) costs per
// request, without booking's work or the network's around it (edge/e2e's BenchmarkEdgeOverhead measures those).
// The gate is off: with the queue off it is one cache read (admission.Gate.Open).
func BenchmarkProxyHold(b *testing.B) {
	upstream := listen(b)
	answer := []byte(`{"bookingId":"b1","status":"HELD"}`)
	up := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.SetStatusCode(fasthttp.StatusCreated)
		c.SetContentType("application/json")
		c.Response.Header.Set("Cache-Control", "no-store")
		c.Response.Header.SetBytesV(HeaderRequestID, c.Request.Header.Peek(HeaderRequestID))
		c.SetBody(answer)
	}}
	go func() { _ = up.Serve(upstream) }()
	b.Cleanup(func() { _ = up.Shutdown() })

	secret := []byte(strings.Repeat("s", token.MinSecretLen))
	issuer, err := token.NewUserIssuer(secret)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := issuer.Issue("u1", time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	s := New(Config{
		Proxy: ProxyConfig{Target: &url.URL{Scheme: "http", Host: upstream.Addr().String()}, DialTimeout: time.Second,
			HeaderTimeout: 5 * time.Second, Timeout: 10 * time.Second, IdleConnTimeout: time.Minute, MaxIdleConns: 64},
		Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Users:    token.NewUserVerifier(secret, nil, 0),
		Limits:   map[edge.Class]Limits{edge.ClassAPI: {PerUser: ratelimit.New(1e9, 1e9, 1000)}},
	})
	s.Forward()
	front := listen(b)
	go func() { _ = s.Serve(front) }()
	b.Cleanup(func() { _ = s.Shutdown(b.Context()) })

	hc := &fasthttp.HostClient{Addr: front.Addr().String(), MaxConns: 64}
	body := []byte(`{"showId":"s1","seatIds":["A1","A2"]}`)
	b.ReportAllocs()
	b.SetParallelism(8) // enough requests in flight to keep the machine busy, as a hold storm does
	cpu := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		for pb.Next() {
			req.Reset()
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI("http://" + hc.Addr + "/api/v1/bookings/hold")
			req.Header.SetContentType("application/json")
			req.Header.Set("Authorization", "Bearer "+raw)
			req.SetBody(body)
			if err := hc.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode() != fasthttp.StatusCreated {
				b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
			}
		}
	})
	b.StopTimer()
	// The CPU time of the process (client, edge and upstream) per hold: less exposed than ns/op to what else
	// the machine runs.
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time (user and system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func listen(b *testing.B) net.Listener {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// BenchmarkShowInBody reads the show of a hold-storm hold's body as the gate does (shared/holdbody, then
// encoding/json for what it declines) and, as the baseline in the same run, as the gate did before: encoding/json
// alone.
func BenchmarkShowInBody(b *testing.B) {
	body := []byte(`{"showId":"sh_146d22e7bc1523ebd22b9921d8df9c87","seatIds":["C12","C13","C14"]}`)
	b.Run("gate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if showInBody(body) == "" {
				b.Fatal("no show")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r struct {
				ShowID string `json:"showId"`
			}
			if json.Unmarshal(body, &r) != nil || r.ShowID == "" {
				b.Fatal("no show")
			}
		}
	})
}
