package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkEdgeOverhead measures what the edge costs on the two requests a flash crowd sends most: the seat map
// and a hold. Each is sent straight to booking and through the edge, with the same client, the same concurrency
// and keep-alive connections, in alternating rounds of the same run, so load from elsewhere on the machine falls on
// both paths alike. edge/direct is the share of booking's own throughput the edge keeps. Through the edge, seat-map
// reads in flight at once share fetches from booking (edge/http/collapse.go), so seatmap may exceed 1: it measures
// that sharing more than the proxy, whose cost for a request of its own is what hold shows.
//
// Holds are those of the hold-storm (queue off, as in loadtest's hold-storm): each worker is a fan with a user
// token, holding one to four seats, 90% of the time among the twenty best; a granted hold is cancelled at once so
// the seats keep cycling, and the cancel counts as one of the round's requests. A 201 or a 409 is a decision; any
// other answer fails the benchmark. The edge's per-user limit stays on, at a rate no fan here reaches, so the
// limiter's work is measured and its refusals are not.
//
// Beside them, in the same rounds, the same requests go through a bare proxy (barehop): a fasthttp server whose
// only work is to pass each request to booking over a pooled connection and its answer back. No proxy can cost
// less than that hop, so hop/direct is the most edge/direct can be on this machine, and edge/hop is what the
// edge's own work (routing, limits, the gate, forwarding headers) keeps of it.
func BenchmarkEdgeOverhead(b *testing.B) {
	p := start(b, map[string]string{"RATE_PER_USER": "1000000", "RATE_PER_USER_BURST": "1000000"})
	hop := barehop(b, p.booking)
	const workers, rounds = 16, 10
	hc := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 4 * workers, MaxIdleConnsPerHost: 2 * workers}}

	tokens := make([]string, workers)
	for i := range tokens {
		_, tokens[i] = guest(b, p)
	}
	var seatMap struct {
		Seats []struct {
			SeatID string `json:"seatId"`
		} `json:"seats"`
	}
	getJSON(b, p.booking+"/api/v1/shows/"+p.show+"/seats", &seatMap)
	if len(seatMap.Seats) < 20 {
		b.Fatalf("the demo show has %d seats", len(seatMap.Seats))
	}
	all := make([]string, len(seatMap.Seats))
	for i, s := range seatMap.Seats {
		all[i] = s.SeatID
	}
	hot := all[:20]

	// do sends one request and drains its answer; it returns the status, and the body only when keep is set.
	do := func(req *http.Request, keep bool) (int, []byte, error) {
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		if keep {
			body, err := io.ReadAll(resp.Body)
			return resp.StatusCode, body, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, err
	}
	seats := func(base string, _ int, _ *rand.Rand) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/shows/"+p.show+"/seats", nil)
		status, _, err := do(req, false)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("seat map: %d", status)
		}
		return 1, err
	}
	hold := func(base string, w int, rng *rand.Rand) (int, error) {
		pool := all
		if rng.IntN(10) < 9 {
			pool = hot
		}
		n := 1 + rng.IntN(4)
		ids := make([]string, 0, n)
		for _, i := range rng.Perm(len(pool))[:n] {
			ids = append(ids, `"`+pool[i]+`"`)
		}
		body := `{"showId":"` + p.show + `","seatIds":[` + strings.Join(ids, ",") + `]}`
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/bookings/hold", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokens[w])
		status, answer, err := do(req, true)
		switch {
		case err != nil:
			return 1, err
		case status == http.StatusConflict:
			return 1, nil
		case status != http.StatusCreated:
			return 1, fmt.Errorf("hold: %d %.200s", status, answer)
		}
		var held struct{ BookingID string }
		if err := json.Unmarshal(answer, &held); err != nil || held.BookingID == "" {
			return 1, fmt.Errorf("hold: %s", answer)
		}
		req, _ = http.NewRequest(http.MethodDelete, base+"/api/v1/bookings/"+held.BookingID, nil)
		req.Header.Set("Authorization", "Bearer "+tokens[w])
		if status, answer, err = do(req, true); err == nil && status != http.StatusOK && status != http.StatusNoContent {
			err = fmt.Errorf("cancel: %d %.200s", status, answer)
		}
		return 2, err
	}

	// load sends about n requests of one kind to base from every worker at once and returns how long they took,
	// the process's CPU time meanwhile and how many were sent; it fails b at the first wrong answer.
	load := func(b *testing.B, base string, n int, send func(string, int, *rand.Rand) (int, error)) (time.Duration, time.Duration, int64) {
		var next, sent atomic.Int64
		var failure atomic.Value
		var wg sync.WaitGroup
		cpu := processCPU()
		begin := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), uint64(n)))
				for next.Add(1) <= int64(n) {
					k, err := send(base, w, rng)
					sent.Add(int64(k))
					if err != nil {
						failure.CompareAndSwap(nil, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := failure.Load().(error); err != nil {
			b.Fatalf("%s: %v", base, err)
		}
		return time.Since(begin), processCPU() - cpu, sent.Load()
	}

	kinds := []struct {
		name string
		send func(string, int, *rand.Rand) (int, error)
	}{{"seatmap", seats}, {"hold", hold}}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			load(b, p.booking, 200, k.send) // warm both paths' connection pools and caches
			load(b, p.edge, 200, k.send)
			load(b, hop, 200, k.send)
			b.ResetTimer()
			per := max(b.N/rounds, 1)
			var direct, edge, bare, directCPU, edgeCPU, bareCPU time.Duration
			var directN, edgeN, bareN int64
			for r := 0; r < rounds; r++ {
				d, c, n := load(b, p.booking, per, k.send)
				direct, directCPU, directN = direct+d, directCPU+c, directN+n
				d, c, n = load(b, p.edge, per, k.send)
				edge, edgeCPU, edgeN = edge+d, edgeCPU+c, edgeN+n
				d, c, n = load(b, hop, per, k.send)
				bare, bareCPU, bareN = bare+d, bareCPU+c, bareN+n
			}
			b.StopTimer()
			directRate, edgeRate := float64(directN)/direct.Seconds(), float64(edgeN)/edge.Seconds()
			hopRate := float64(bareN) / bare.Seconds()
			b.ReportMetric(directRate, "direct-req/s")
			b.ReportMetric(edgeRate, "edge-req/s")
			b.ReportMetric(edgeRate/directRate, "edge/direct")
			b.ReportMetric(hopRate, "hop-req/s")
			b.ReportMetric(hopRate/directRate, "hop/direct")
			b.ReportMetric(edgeRate/hopRate, "edge/hop")
			// CPU time of the whole process (client, edge and booking) per request: what the edge adds, less
			// exposed than a rate to how much of the machine other work takes.
			b.ReportMetric(float64(directCPU.Microseconds())/float64(directN), "direct-cpu-µs/req")
			b.ReportMetric(float64(edgeCPU.Microseconds())/float64(edgeN), "edge-cpu-µs/req")
			b.ReportMetric(float64(bareCPU.Microseconds())/float64(bareN), "hop-cpu-µs/req")
		})
	}
}

// barehop starts the least a proxy can be in front of upstream: every request is passed on as it came, over a
// pooled keep-alive connection, and the answer back as it came. It returns the hop's base URL.
func barehop(b *testing.B, upstream string) string {
	b.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hc := &fasthttp.HostClient{Addr: u.Host}
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		if err := hc.Do(&c.Request, &c.Response); err != nil {
			c.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// processCPU is the CPU time (user and system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
