package flood_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/pow"
)

// scale divides the default difficulties in the tests `make test` runs: under the race detector hashing is
// several times slower, and a full minute of a bot's hashing at the defaults would hold both cores of a shared
// machine. ALTCHA's secret number is uniform in [0, maxnumber], so a scaled challenge's hashes times scale are
// distributed as the full challenge's: counting hashes, a scaled run stands for a full one.
const scale = 1000

// coreRate is the hashes a second one core of this machine does natively (BenchmarkSolve/workers=1 in
// shared/pow: 3.5 to 4.5 M on a 2-vCPU Intel Xeon, 2026-11-26). The tests turn counted hashes into time at this
// rate, so their verdicts depend neither on the race detector nor on the machine's load; the benchmarks measure
// the rate in their own run instead.
const coreRate = 4.5e6

// defaults is the platform's default bot protection, stated in full so that a run says what it played at.
func defaults() *client.BotProtection {
	d := admission.DefaultBotProtection()
	on := true
	return &client.BotProtection{Enabled: &on, BaseDifficulty: d.BaseDifficulty, MaxDifficulty: d.MaxDifficulty,
		FreeChallenges: d.FreeChallenges, DoublingChallenges: d.DoublingChallenges, HalfLifeSeconds: d.HalfLifeSeconds,
		LoadJoinsPerMinute: d.LoadJoinsPerMinute, PrefixPlaces: d.PrefixPlaces, Suspects: d.Suspects}
}

// scaled is the defaults with both difficulties divided by scale.
func scaled() *client.BotProtection {
	b := defaults()
	b.BaseDifficulty /= scale
	b.MaxDifficulty /= scale
	return b
}

func describe(b *client.BotProtection) string {
	if b == nil {
		return "unsaid"
	}
	return fmt.Sprintf("enabled %t, base %d, max %d, free %g, doubling %g, half-life %d s, load %d places/min, "+
		"prefix places %d, suspects %s", b.On(), b.BaseDifficulty, b.MaxDifficulty, b.FreeChallenges,
		b.DoublingChallenges, b.HalfLifeSeconds, b.LoadJoinsPerMinute, b.PrefixPlaces, b.Suspects)
}

// start runs the platform with every address limited and counted as a public one (RATE_EXEMPT=none), and a client
// whose requests all come from one address: a loopback address of the test's own, drawn at random, which stands
// for one address on the internet. Its own, because the guest limit counts an address's identities across every
// show and every platform on the shared Redis (for ten minutes' half-life): on 127.0.0.1 one run's identities
// would be charged to the next run, and to every other test's. The count is deleted when the test ends. A test's
// requests reach the edge through platformtest's contract check, a proxy on 127.0.0.1, which the edge trusts
// (TRUSTED_PROXIES) to name the client in X-Forwarded-For, as a CDN does; a benchmark's reach it directly. The
// edge's per-address API limit (RATE_PER_IP, 200/s) is its default; edge are further variables of the edge's,
// name then value.
func start(tb testing.TB, edge ...string) (*platformtest.Platform, *client.Client, *http.Transport, string) {
	tb.Helper()
	env := map[string]string{"RATE_EXEMPT": "none", "TRUSTED_PROXIES": "127.0.0.1/32"}
	for i := 0; i+1 < len(edge); i += 2 {
		env[edge[i]] = edge[i+1]
	}
	p := platformtest.Start(tb, platformtest.Options{Edge: env})
	addr := netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
	tb.Cleanup(func() { forgetGuests(tb, p, admission.Prefix(addr)) })
	tr := client.NewTransport(512)
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: addr.AsSlice()}}
	tr.DialContext = d.DialContext
	tb.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(p.BaseURL, tr, client.Options{AdminToken: p.AdminToken, Timeout: 30 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("the clients' address: %s", addr)
	return p, c, tr, admission.Prefix(addr)
}

// countedAs fails unless every place the show's queue gave was counted against prefix: the edge saw the
// clients' address as theirs, not the proxy's or the machine's.
func countedAs(tb testing.TB, f client.BotFigures, prefix string) {
	tb.Helper()
	for _, p := range f.TopPrefixes {
		if p.Prefix != prefix {
			tb.Errorf("%d places were counted against %s, want every place against the clients' %s", p.Places,
				p.Prefix, prefix)
		}
	}
}

// guestPressure is the waiting room's count of guest identities per address prefix (waitroom/redis).
const guestPressure = "{guest}:pressure"

// forgetGuests deletes prefix's count of guest identities from the shared Redis.
func forgetGuests(tb testing.TB, p *platformtest.Platform, prefix string) {
	rdb, err := driver.OpenRedis(p.RedisURL, p.RedisClusterAddrs, 1)
	if err != nil {
		tb.Logf("forgetting %s's guest count: %v", prefix, err)
		return
	}
	defer rdb.Close()
	if err := rdb.HDel(context.Background(), guestPressure, prefix).Err(); err != nil {
		tb.Logf("forgetting %s's guest count: %v", prefix, err)
	}
}

// queuedShow creates a show whose sale is open and whose queue is on with bot protection b, admitting nobody for
// the test's length (every place stays waiting), and returns it with its settings as the platform answers them.
// It fails unless the platform applied b.
func queuedShow(ctx context.Context, tb testing.TB, c *client.Client, b *client.BotProtection) (string, client.QueueSettings) {
	tb.Helper()
	sc := loadtest.Presets["smoke"]
	sc.Seats, sc.SaleDelay, sc.AdmitPerSecond, sc.MaxActive = 20, 0, 0.001, 1
	sc.BotDifficulty = b.BaseDifficulty
	show, opens, err := crowd.Setup(ctx, c, sc, strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		tb.Fatal(err)
	}
	q := client.QueueSettings{Enabled: true, AdmitPerSecond: sc.AdmitPerSecond, MaxActive: sc.MaxActive,
		TokenTTLSeconds: int(sc.TokenTTL / time.Second), BotProtection: b}
	if _, err := c.PutQueue(ctx, show, q); err != nil {
		tb.Fatal(err)
	}
	got, err := c.Queue(ctx, show)
	if err != nil {
		tb.Fatal(err)
	}
	if g := got.BotProtection; g == nil || describe(g) != describe(b) {
		tb.Fatalf("the platform runs bot protection %s, want %s", describe(g), describe(b))
	}
	time.Sleep(time.Until(opens)) // joins after opening take tickets at once
	return show, got
}

// guest mints a guest identity as a script does, waiting out the Retry-After of a 429 (a limit on minting
// identities per address). It returns the identity's bearer token and how long it waited.
func guest(ctx context.Context, c *client.Client) (string, time.Duration, error) {
	var waited time.Duration
	for {
		g, res, err := c.NewGuest(ctx)
		switch {
		case err != nil:
			return "", waited, err
		case res.Status == http.StatusCreated || res.Status == http.StatusOK:
			return g.Token, waited, nil
		case res.Status != http.StatusTooManyRequests:
			return "", waited, fmt.Errorf("guest: status %d", res.Status)
		}
		d := max(res.RetryAfter, time.Second)
		waited += d
		select {
		case <-ctx.Done():
			return "", waited, ctx.Err()
		case <-time.After(d):
		}
	}
}

// join joins show as user, solving what a refusal asks (client.Join), and waits out a 429's Retry-After (the
// edge's per-address limits) before trying again. It fails unless the answer is a place.
func join(ctx context.Context, c *client.Client, user, show string) (client.QueueState, time.Duration, error) {
	var waited time.Duration
	for {
		q, res, err := c.Join(ctx, user, show, "")
		switch {
		case err != nil:
			return q, waited, err
		case res.Status == http.StatusOK && q.Status == "waiting":
			return q, waited, nil
		case res.Status != http.StatusTooManyRequests:
			return q, waited, fmt.Errorf("join: status %d %s, queue status %q", res.Status, res.ProblemSlug(), q.Status)
		}
		d := max(res.RetryAfter, 100*time.Millisecond)
		waited += d
		select {
		case <-ctx.Done():
			return q, waited, ctx.Err()
		case <-time.After(d):
		}
	}
}

// places is every place the show's queue holds or gave: waiting, admitted and still active, admitted before, and
// passed over at the head of the line (a fan who joined and then fell silent for the heartbeat's grace, as these
// fans do once they have their place).
func places(q client.QueueSettings) int {
	return q.Waiting + q.Active + q.AdmittedTotal + q.SkippedTotal
}

// measureRate returns the hashes a second workers goroutines reach here and now, solving a challenge that has no
// answer (so every number is tried: exactly maxnumber+1 hashes) for about d: BenchmarkSolve's measure, made in
// the benchmark's own run.
func measureRate(tb testing.TB, workers int, d time.Duration) float64 {
	tb.Helper()
	is, err := pow.NewIssuer([]byte(strings.Repeat("r", 32)))
	if err != nil {
		tb.Fatal(err)
	}
	// A real challenge's salt, so each try hashes the same tail as a fan's.
	c, err := is.Issue(pow.Terms{Scope: pow.ShowScope("rate"), Identity: "u", MaxNumber: 1 << 40, TTL: time.Minute},
		time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	c.Challenge = strings.Repeat("00", 32)
	c.MaxNumber = 1 << 20
	var hashes int64
	start := time.Now()
	for time.Since(start) < d {
		pow.Solve(c, workers, nil)
		hashes += c.MaxNumber + 1
	}
	return float64(hashes) / time.Since(start).Seconds()
}
