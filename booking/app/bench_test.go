package app_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/rowlock"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/token"
)

// BenchmarkHotShow aims one hot show (200 seats, 500 concurrent clients, 80% of requests for two adjacent seats
// among the same 20) at booking and at the classic row-locking design, through HTTP, in the same run, and reports
// decisions per second (201 or 409) and p50/p99 latency of each, and the ratios; and, as the floor, the same
// clients against a server that answers 409 without doing anything; and for each of the three, the CPU time
// this process (the servers') spent in its rounds per decision. Holds last 1s in both so seats keep coming
// back. BENCH_DURATION (default 5s) is the measured load time per design, BENCH_ROUNDS (default 5) the rounds it
// is cut into, BENCH_WARMUP (default 1s) the unmeasured round each design gets first; run it once:
//
//	go test -run '^$' -bench HotShow -benchtime 1x ./booking/app/
func BenchmarkHotShow(b *testing.B) {
	dur := envDuration("BENCH_DURATION", 5*time.Second)
	warmup := envDuration("BENCH_WARMUP", time.Second)
	rig := newHotShowRig(b, 500)
	// The machine is shared and its load drifts: alternate the designs (and the floor) in short rounds so all
	// see the same conditions, and add the rounds up.
	rounds := envInt("BENCH_ROUNDS", 5)
	b.ResetTimer()
	// The clients run in a process of their own (this test binary again), so the servers' goroutines do not
	// share a scheduler with 500 client goroutines; the operating system shares the CPUs between them.
	res := runLoadProcess(b, loadJob{URLs: []string{rig.rowlock, rig.booking, startFloor(b)}, Show: rig.show,
		Tokens: rig.tokens, Round: dur / time.Duration(rounds), Rounds: rounds, Warmup: warmup})
	base, ours, floor := res[0], res[1], res[2]
	b.StopTimer()

	b.ReportMetric(ours.rate, "booking-decisions/s")
	b.ReportMetric(ours.p50.Seconds()*1000, "booking-p50-ms")
	b.ReportMetric(ours.p99.Seconds()*1000, "booking-p99-ms")
	b.ReportMetric(base.rate, "rowlock-decisions/s")
	b.ReportMetric(base.p50.Seconds()*1000, "rowlock-p50-ms")
	b.ReportMetric(base.p99.Seconds()*1000, "rowlock-p99-ms")
	b.ReportMetric(ours.rate/base.rate, "x-throughput")
	b.ReportMetric(float64(base.p99)/float64(ours.p99), "x-p99")
	b.ReportMetric(floor.rate, "floor-decisions/s")
	b.ReportMetric(floor.p99.Seconds()*1000, "floor-p99-ms")
	b.ReportMetric(float64(base.p99)/float64(floor.p99), "x-p99-floor")
	// The servers' process's CPU (getrusage) in each design's rounds over the decisions in them: what a decision
	// costs the server, much steadier on a shared machine than the rate. Redis and PostgreSQL run in processes
	// of their own and are not counted: for booking's refusals, decided in memory, that leaves out little; for
	// the baseline, every decision's queries.
	b.ReportMetric(perDecision(ours.serverCPU, ours), "booking-cpu-µs/decision")
	b.ReportMetric(perDecision(base.serverCPU, base), "rowlock-cpu-µs/decision")
	b.ReportMetric(perDecision(floor.serverCPU, floor), "floor-cpu-µs/decision")
	b.Logf("booking: %s (%d rounds after a %v warm-up); server CPU %.1f µs a decision", ours, rounds, warmup,
		perDecision(ours.serverCPU, ours))
	b.Logf("rowlock: %s; server CPU %.1f µs a decision", base, perDecision(base.serverCPU, base))
	b.Logf("floor:   %s; server CPU %.1f µs a decision", floor, perDecision(floor.serverCPU, floor))
}

// hotShowRig is the hot show of the hold benchmarks, served by booking and by the row-lock baseline: booking on
// a Redis of its own with 1 s holds (so seats keep coming back), the baseline with the same seats and hold
// length, and a user token for each of the load generator's clients.
type hotShowRig struct {
	booking, rowlock, show string
	tokens                 []string
}

func newHotShowRig(b *testing.B, clients int) hotShowRig {
	ttl := time.Second
	// Both designs get 16 Postgres connections: the machine's Postgres allows 100, shared with other tests.
	// Booking gets a Redis of its own, so other work on the shared one (a million-fan queue benchmark issues
	// 20 ms commands) does not stall it; the baseline's Postgres is the shared one, as is booking's.
	bookingURL := startBooking(b, map[string]string{"HOLD_TTL": ttl.String(), "BENCH_POOL": "16",
		"REDIS_URL": startRedis(b)}, nil)
	show := seedShow(client{t: b, base: bookingURL})
	var layout struct {
		Seats []struct {
			SeatID, Category string
			Price            int64
		}
	}
	client{t: b, base: bookingURL}.call("GET", "/api/v1/shows/"+show+"/seats", "", nil, &layout)
	seats := make([]booking.Seat, len(layout.Seats))
	for i, s := range layout.Seats {
		seats[i] = booking.Seat{ID: s.SeatID, Category: s.Category, Price: s.Price}
	}
	iss, _ := token.NewUserIssuer([]byte(testSecret))
	tokens := make([]string, clients)
	for i := range tokens {
		tokens[i], _ = iss.Issue(fmt.Sprintf("bench-%d", i), time.Now(), time.Hour)
	}
	return hotShowRig{booking: bookingURL, rowlock: startRowlock(b, show, seats, ttl), show: show, tokens: tokens}
}

// startFloor serves a constant 409 to every request, doing no work at all: what the machine, the clients and
// fasthttp allow, measured in the same run. x-p99-floor is the p99 ratio booking would show if it cost nothing.
func startFloor(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"type":"about:blank","title":"Seats unavailable","status":409,"unavailable":["E10","E11"],` +
		`"alternatives":["E14","E15"],"detail":"` + strings.Repeat("x", 200) + `"}`)
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.SetStatusCode(fasthttp.StatusConflict)
		c.SetContentType("application/problem+json")
		c.SetBody(body)
	}}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// startRedis runs a private redis-server on a free port for the benchmark and stops it at the end.
func startRedis(b *testing.B) string {
	return storetest.StartRedis(b, "--notify-keyspace-events", "Ex").URL
}

// startRowlock serves the baseline's hold route with the same user-token check as booking.
func startRowlock(b *testing.B, show string, seats []booking.Seat, ttl time.Duration) string {
	_, url := pgtest.NewWithURL(b)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 16 // as booking's pool in this benchmark
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if err := rowlock.Setup(ctx, pool); err != nil {
		b.Fatal(err)
	}
	st := rowlock.New(pool, ttl)
	var once sync.Once
	st.OnError = func(err error) { once.Do(func() { b.Logf("rowlock error: %v", err) }) }
	if err := st.CreateShow(ctx, show, seats); err != nil {
		b.Fatal(err)
	}
	users := token.NewUserVerifier([]byte(testSecret), nil, 0)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	st.Mount(app, func(c *fiber.Ctx) error {
		raw := c.Get(fiber.HeaderAuthorization)
		if len(raw) < 8 {
			return c.SendStatus(fiber.StatusUnauthorized)
		}
		id, err := users.Verify(raw[7:])
		if err != nil {
			return c.SendStatus(fiber.StatusUnauthorized)
		}
		c.Locals("user", id)
		return c.Next()
	}, func(c *fiber.Ctx) string { id, _ := c.Locals("user").(string); return id })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

type loadResult struct {
	decisions, held, errors int
	rate                    float64
	p50, p99                time.Duration
	lat                     []time.Duration
	elapsed                 time.Duration
	// serverCPU and loadCPU are the CPU time the servers' process and the load process spent in the rounds.
	serverCPU, loadCPU time.Duration
}

// add merges the rounds of one design.
func (r loadResult) add(o loadResult) loadResult {
	r.held += o.held
	r.errors += o.errors
	r.lat = append(r.lat, o.lat...)
	r.elapsed += o.elapsed
	r.serverCPU += o.serverCPU
	r.loadCPU += o.loadCPU
	return r
}

// done computes the rate and percentiles of the merged rounds.
func (r loadResult) done() loadResult {
	slices.Sort(r.lat)
	r.decisions = len(r.lat)
	r.rate = float64(len(r.lat)) / r.elapsed.Seconds()
	if len(r.lat) > 0 {
		r.p50 = r.lat[len(r.lat)/2]
		r.p99 = r.lat[len(r.lat)*99/100]
	}
	return r
}

func (r loadResult) String() string {
	q := func(f float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[int(float64(len(r.lat)-1)*f)].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("%d decisions (%d held) in the window, %.0f/s, p50 %v, p90 %v, p99 %v, p99.9 %v, %d errors",
		r.decisions, r.held, r.rate, q(.5), q(.9), q(.99), q(.999), r.errors)
}

// fleet is the benchmark's clients of one server: each with a connection of its own, as fans' browsers have,
// and a generator that draws its requests: 80% for two adjacent seats of row E (the hot 20), the rest for two
// adjacent seats elsewhere. The client is fasthttp's, the cheapest at hand, so that the load generator, sharing
// the machine with the servers, takes as little from them as it can.
type fleet struct {
	t       testing.TB
	clients []*benchClient
}

type benchClient struct {
	hc        *fasthttp.HostClient
	req       *fasthttp.Request
	resp      *fasthttp.Response
	rng       *rand.Rand
	pick      func() []byte
	lat       []time.Duration
	held, err int
}

func newFleet(t testing.TB, base, show string, tokens []string) *fleet {
	rows := "ABCDFGHIJ"
	body := func(row string, n int) []byte {
		return []byte(fmt.Sprintf(`{"showId":%q,"seatIds":[%q,%q]}`, show, booking.SeatID(row, n), booking.SeatID(row, n+1)))
	}
	// Every request body is made before the clock starts.
	hot := make([][]byte, 19)
	for n := range hot {
		hot[n] = body("E", n+1)
	}
	cold := make([][]byte, 0, 19*len(rows))
	for _, r := range rows {
		for n := range 19 {
			cold = append(cold, body(string(r), n+1))
		}
	}
	f := &fleet{t: t}
	for i, tok := range tokens {
		// No read or write timeouts: each would reset a deadline on every request, and a stuck server shows as
		// a run that does not end rather than as errors.
		c := &benchClient{hc: &fasthttp.HostClient{Addr: strings.TrimPrefix(base, "http://"), MaxConns: 1},
			req: new(fasthttp.Request), resp: new(fasthttp.Response), rng: rand.New(rand.NewPCG(uint64(i), 42)),
			// Written through once now, so the first round does not pay for fresh memory.
			lat: slices.Repeat([]time.Duration{0}, 4096)[:0]}
		c.req.Header.SetMethod("POST")
		c.req.SetRequestURI(base + "/api/v1/bookings/hold")
		c.req.Header.SetContentType("application/json")
		c.req.Header.Set("Authorization", "Bearer "+tok)
		c.pick = func() []byte {
			if c.rng.IntN(10) < 8 {
				return hot[c.rng.IntN(len(hot))]
			}
			return cold[c.rng.IntN(len(cold))]
		}
		f.clients = append(f.clients, c)
	}
	// Every client opens its connection now (a health check, not measured): the measurement is of decisions,
	// not of 500 TCP handshakes.
	var wg sync.WaitGroup
	for _, c := range f.clients {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(base + "/healthz")
			if err := c.hc.Do(req, resp); err != nil {
				t.Errorf("health check: %v", err)
			}
		})
	}
	wg.Wait()
	return f
}

func (f *fleet) close() {
	for _, c := range f.clients {
		c.hc.CloseIdleConnections()
	}
}

// run has every client send holds back to back for dur, all starting together.
func (f *fleet) run(dur time.Duration) loadResult {
	var deadline, start time.Time
	var ready, wg sync.WaitGroup
	go1 := make(chan struct{})
	for _, c := range f.clients {
		c.lat, c.held, c.err = c.lat[:0], 0, 0
		ready.Add(1)
		wg.Go(func() {
			ready.Done()
			<-go1
			for time.Now().Before(deadline) {
				c.req.SetBodyRaw(c.pick())
				t0 := time.Now()
				err := c.hc.Do(c.req, c.resp)
				d := time.Since(t0)
				if err != nil {
					if c.err++; c.err == 1 {
						f.t.Logf("request error: %v", err)
					}
					continue
				}
				switch c.resp.StatusCode() {
				case 201:
					c.held++
					c.lat = append(c.lat, d)
				case 409, 422: // 422: this client is at its per-user cap; still a decision
					c.lat = append(c.lat, d)
				default:
					if c.err++; c.err == 1 {
						f.t.Logf("unexpected status %d: %s", c.resp.StatusCode(), c.resp.Body())
					}
				}
			}
		})
	}
	ready.Wait()
	start = time.Now()
	deadline = start.Add(dur)
	close(go1)
	wg.Wait()
	res := loadResult{elapsed: time.Since(start)}
	for _, c := range f.clients {
		res.lat = append(res.lat, c.lat...)
		res.held += c.held
		res.errors += c.err
	}
	return res
}

// runRounds opens a fleet for each server, gives each a warm-up round that is not measured (connection pools,
// caches, the first claims of a show, and the load process's own fresh memory), then alternates measured rounds.
func runRounds(t testing.TB, job loadJob) []loadResult {
	fleets := make([]*fleet, len(job.URLs))
	for i, url := range job.URLs {
		tokens := job.Tokens
		if i < len(job.Clients) {
			tokens = tokens[:job.Clients[i]]
		}
		fleets[i] = newFleet(t, url, job.Show, tokens)
		defer fleets[i].close()
	}
	for _, f := range fleets {
		f.run(job.Warmup)
	}
	res := make([]loadResult, len(fleets))
	for range job.Rounds {
		for i, f := range fleets {
			server, load := serverCPU(), processCPU()
			r := f.run(job.Round)
			r.serverCPU, r.loadCPU = serverCPU()-server, processCPU()-load
			res[i] = res[i].add(r)
		}
	}
	for i := range res {
		res[i] = res[i].done()
	}
	return res
}

// loadJob is what runLoadProcess hands the helper process, and loadReport what it gets back, per server.
type loadJob struct {
	URLs          []string
	Show          string
	Tokens        []string
	Round, Warmup time.Duration
	Rounds        int
	Clients       []int // per URL, how many clients (the first of Tokens); all of Tokens when not given
}

type loadReport struct {
	Lat                         []time.Duration
	Held, Errors                int
	Elapsed, ServerCPU, LoadCPU time.Duration
}

// runLoadProcess runs runRounds in a child process (TestLoadHelper of this test binary).
func runLoadProcess(b testing.TB, job loadJob) []loadResult {
	var reps []loadReport
	runChild(b, "TestLoadHelper", job, &reps)
	res := make([]loadResult, len(reps))
	for i, r := range reps {
		res[i] = loadResult{held: r.Held, errors: r.Errors, lat: r.Lat, elapsed: r.Elapsed, serverCPU: r.ServerCPU,
			loadCPU: r.LoadCPU}.done()
	}
	return res
}

// TestLoadHelper is the load process of BenchmarkHotShow; it does nothing in a normal test run.
func TestLoadHelper(t *testing.T) {
	var job loadJob
	if !childJob(t, &job) {
		t.Skip("the benchmark's load process")
	}
	var reps []loadReport
	for _, r := range runRounds(t, job) {
		reps = append(reps, loadReport{Lat: r.lat, Held: r.held, Errors: r.errors, Elapsed: r.elapsed,
			ServerCPU: r.serverCPU, LoadCPU: r.loadCPU})
	}
	childReport(t, reps)
}

// serverCPU is the CPU time (user and system) of the servers' process, this load process's parent: its
// getrusage, asked over runChild's pipe; else (Linux) from /proc, to the clock tick (10 ms); else 0.
func serverCPU() time.Duration {
	if d, ok := parentCPU()(); ok {
		return d
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", os.Getppid()))
	end := bytes.LastIndexByte(raw, ')')
	if err != nil || end < 0 {
		return 0
	}
	f := strings.Fields(string(raw[end+1:])) // from the state, the third field of stat(5)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
