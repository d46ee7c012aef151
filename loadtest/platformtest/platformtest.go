// Package platformtest starts the real platform inside a test: the payment simulator, booking and the edge (with
// its waiting room), each through its own app's Run on a free loopback port, over a fresh Postgres database and
// the shared Redis (or a Redis Cluster: Options.RedisClusterAddrs). The load test's tests play against it as
// clients would, through the edge; nothing of the platform is imitated. Every key a test writes to Redis is under
// the shows it creates, so tests isolate by creating their own shows; the platform deletes those keys once it
// has stopped.
package platformtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	bookingapp "github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/booking/payment/sim"
	edgeapp "github.com/flashseat/flashseat/edge/app"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/token"
)

// Options tune the platform for a test. The zero value is the smoke test's platform.
type Options struct {
	HoldTTL           time.Duration // booking's HOLD_TTL; default 20s
	ReconcileInterval time.Duration // booking's RECONCILE_INTERVAL; default 2s
	// PaymentTimeout is booking's per-call gateway timeout (PAYMENT_TIMEOUT; default 5s) and SlowDelay how long
	// the simulator takes to approve pm_card_slow (default 6s). SlowDelay must exceed PaymentTimeout: that is what
	// makes a slow card a 202 and a payment the recovery worker settles.
	PaymentTimeout time.Duration
	SlowDelay      time.Duration
	// MaxConns caps booking's Postgres pool (pool_max_conns); 0 keeps booking's own default (32). Tests that start
	// several platforms at once keep it small: the server has 100 connections for every test of the machine.
	MaxConns int
	// DatabaseServer is the PostgreSQL the test's database is created on (a URL, perhaps multi-host, as a
	// failover formation's); default DATABASE_URL's server (pgtest).
	DatabaseServer string
	// PgBouncer puts a PgBouncer of the test's (transaction pooling, this many server connections) between
	// booking and the edge and their database, with DATABASE_POOLER=pgbouncer; 0: they reach it directly.
	// Platform.DatabaseURL stays the direct URL, for a test's own reads.
	PgBouncer int
	// RedisURL is the single Redis (REDIS_URL); default $REDIS_URL, else redis://127.0.0.1:6379/0.
	RedisURL string
	// RedisClusterAddrs puts the platform on a Redis Cluster (REDIS_CLUSTER_ADDRS) instead of REDIS_URL's Redis:
	// the package's shared cluster (redistest), or one of the test's own that it fails over (storetest).
	RedisClusterAddrs []string
	// AdminToken is booking's and the edge's operator token; default a fresh one.
	AdminToken string
	// Ops gives booking and the edge their operations listeners (OPS_ADDR: /metrics, pprof, probes) on loopback
	// ports: Platform.BookingOpsURL and EdgeOpsURL.
	Ops bool
	// Booking and Edge are further environment variables of each service, applied over the ones Start sets
	// (PAYMENT_RECOVER_INTERVAL, PAYMENT_BREAKER_MIN_CALLS, QUEUE_TICK, ...).
	Booking, Edge map[string]string
	// Edges is how many edge replicas serve the waiting room and the gate (default 1): the same configuration and
	// admission key on their own ports, sharing Redis and booking, as a deployment scales the edge.
	Edges int
	// Bookings is how many booking replicas run (default 1): the same configuration on their own ports, sharing
	// the stores. The edge forwards to the first (BookingURL); a test reaches the others at BookingURLs.
	Bookings int
	// NoContractCheck sends the test's requests to the edge directly rather than through the proxy that checks
	// them and their answers against openapi.yaml (contract.go). Benchmarks never go through it.
	NoContractCheck bool
}

// Platform is a running platform. Everything stops when the test that started it ends.
type Platform struct {
	BaseURL     string   // the edge, the only address a fan uses (through the contract check, contract.go)
	EdgeURLs    []string // every edge replica, BaseURL first
	BookingURL  string   // booking itself, behind the edge
	BookingURLs []string // every booking replica, BookingURL first
	PaymentURL  string   // the payment simulator
	AdminToken  string   // the operator token of booking and the edge
	AuthSecret  string   // booking's and the edge's user-token secret (HS256)
	DatabaseURL string   // the test's own database
	// BookingOpsURL and EdgeOpsURL are the services' operations listeners when Options.Ops asked for them.
	BookingOpsURL, EdgeOpsURL string
	// Issuer signs admission tokens with the edge's key, as the waiting room does when it admits a fan.
	Issuer   *token.Issuer
	RedisURL string // the shared Redis (REDIS_URL, default redis://127.0.0.1:6379/0); empty on a cluster
	// RedisClusterAddrs are the cluster's nodes when Options put the platform on one.
	RedisClusterAddrs []string
	// Bouncer is the PgBouncer between the services and the database when Options asked for one.
	Bouncer *storetest.PgBouncer
	Options Options
	// booking runs one more booking replica with the platform's configuration (StartBooking).
	booking RunFunc
}

// StartBooking starts one more booking replica, with the platform's configuration, on a port of its own and
// returns its URL: a process that starts with nothing in memory, as a restarted booking does.
func (p *Platform) StartBooking(t testing.TB) string {
	t.Helper()
	return Serve(t, "booking", p.booking)
}

// Start starts the platform on free loopback ports and stops it in t.Cleanup. It fails the test when a service
// does not come up within a minute.
func Start(t testing.TB, opts Options) *Platform {
	t.Helper()
	if opts.HoldTTL <= 0 {
		opts.HoldTTL = 20 * time.Second
	}
	if opts.ReconcileInterval <= 0 {
		opts.ReconcileInterval = 2 * time.Second
	}
	if opts.PaymentTimeout <= 0 {
		opts.PaymentTimeout = 5 * time.Second
	}
	if opts.SlowDelay <= 0 {
		opts.SlowDelay = opts.PaymentTimeout + time.Second
	}
	if opts.SlowDelay <= opts.PaymentTimeout {
		t.Fatalf("platformtest: SlowDelay %s must exceed PaymentTimeout %s, or pm_card_slow is just a slow ok",
			opts.SlowDelay, opts.PaymentTimeout)
	}
	var dbURL string
	if opts.DatabaseServer != "" {
		_, dbURL = pgtest.NewOn(t, opts.DatabaseServer)
	} else {
		_, dbURL = pgtest.NewWithURL(t)
	}
	redisURL := sharedRedis(opts.RedisURL)
	redisEnv := map[string]string{"REDIS_URL": redisURL}
	if len(opts.RedisClusterAddrs) > 0 {
		redisURL = ""
		redisEnv = map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(opts.RedisClusterAddrs, ",")}
	}
	p := &Platform{
		AdminToken:  opts.AdminToken,
		AuthSecret:  "platformtest-user-token-secret-0123456789abcdef",
		DatabaseURL: dbURL,
		RedisURL:    redisURL,
		Options:     opts,
	}
	if p.AdminToken == "" {
		p.AdminToken = "adm_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	p.RedisClusterAddrs = opts.RedisClusterAddrs
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	p.Issuer = token.NewIssuer(key)
	// The services' warnings and errors are kept and shown if the test fails: a failure that only a loaded full run
	// meets is then explained by what the services said, without -v.
	said := &warnings{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the platform's warnings and errors:\n%s", said.String())
		}
	})
	var out io.Writer = said
	if testing.Verbose() {
		out = io.MultiWriter(os.Stderr, said)
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// As the services' mains do. go-redis's logger is the process's: every platform of a test binary sets the same.
	driver.LogRedis(log)

	// The simulator sends its signed webhooks to booking (a 3-D Secure payment is settled by one), so booking's
	// address is chosen before either starts: a port reserved for the test, which booking listens on a moment later.
	bookingAddr := storetest.FreeAddr(t)
	p.PaymentURL = Serve(t, "paysim", func(ctx context.Context, ready func(string)) error {
		return sim.Run(ctx, sim.Config{Addr: "127.0.0.1:0", SlowDelay: opts.SlowDelay,
			WebhookURL: "http://" + bookingAddr + "/webhooks/payments", WebhookSecret: webhookSecret}, log, ready)
	})

	stream := "{flashseat:events-test}:" + strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.Itoa(rand.Int())
	// Before the services start, so that it runs once they have stopped: the test's event stream goes with its
	// shows' keys.
	DeleteShowsAfter(t, dbURL, redisEnv, stream)
	servicesDB, pooler := dbURL, ""
	if opts.PgBouncer > 0 {
		p.Bouncer = storetest.StartPgBouncer(t, dbURL, opts.PgBouncer)
		servicesDB, pooler = p.Bouncer.URL, driver.PoolerPgBouncer
	}
	bookingDB := servicesDB
	if opts.MaxConns > 0 {
		bookingDB = withParam(servicesDB, "pool_max_conns", strconv.Itoa(opts.MaxConns))
	}
	env := map[string]string{
		"BOOKING_ADDR": bookingAddr, "DATABASE_URL": bookingDB, "DATABASE_POOLER": pooler, "ADMIN_TOKEN": p.AdminToken,
		"AUTH_SECRET": p.AuthSecret, "HOLD_TTL": opts.HoldTTL.String(),
		"RECONCILE_INTERVAL": opts.ReconcileInterval.String(), "PAYMENT_TIMEOUT": opts.PaymentTimeout.String(),
		"PAYMENT_GATEWAY_URL": p.PaymentURL, "PAYMENT_WEBHOOK_SECRET": webhookSecret,
		"TICKET_SIGNING_KEY": base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"LOG_LEVEL":          "warn",
		// An event stream of its own on the shared Redis: other platforms' consumer groups must not take its events.
		"EVENTS_STREAM": stream,
		// Tests' webhook receivers are httptest servers on loopback.
		"WEBHOOK_ALLOW_PRIVATE": "true",
	}
	maps.Copy(env, redisEnv)
	maps.Copy(env, opts.Booking)
	bcfg, err := bookingapp.LoadConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	// Booking verifies admission tokens with the edge's key handed over directly: with :0 ports the edge's JWKS
	// URL is not known before booking starts.
	bcfg.AdmissionKeys = token.NewStaticKeys(key.Public())
	bookingOps := make(chan string, 1)
	if opts.Ops {
		bcfg.OpsAddr, bcfg.OpsBound = "127.0.0.1:0", func(a string) { bookingOps <- a }
	}
	p.BookingURL = Serve(t, "booking", func(ctx context.Context, ready func(string)) error {
		return bookingapp.Run(ctx, bcfg, log, ready)
	})
	p.BookingURLs = []string{p.BookingURL}
	// The simulator's webhooks go to the first replica, as a load balancer would send them to one of them.
	more := bcfg
	more.Addr, more.OpsAddr, more.OpsBound = "127.0.0.1:0", "", nil
	p.booking = func(ctx context.Context, ready func(string)) error { return bookingapp.Run(ctx, more, log, ready) }
	for range max(1, opts.Bookings) - 1 {
		p.BookingURLs = append(p.BookingURLs, Serve(t, "booking", p.booking))
	}

	eenv := map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "BOOKING_URL": p.BookingURL, "DATABASE_URL": servicesDB, "DATABASE_POOLER": pooler,
		"AUTH_SECRET": p.AuthSecret, "ADMIN_TOKEN": p.AdminToken, "ADMISSION_SIGNING_KEY": token.EncodeSeed(key),
		"ADMISSION_KEY_ID": key.ID, "EVENTS_STREAM": stream,
		// A browser test's fan walks through many pages and bookings in seconds; at the default per-user limit
		// (10/s, burst 30) a full make test turned its checkout away with 429 now and then. Rate limits have tests
		// of their own (edge/app); here they would only make the journeys flaky. Options.Edge may set them back.
		"RATE_PER_USER": "200", "RATE_PER_USER_BURST": "1000",
	}
	maps.Copy(eenv, redisEnv)
	if opts.Ops {
		eenv["OPS_ADDR"] = "127.0.0.1:0"
	}
	maps.Copy(eenv, opts.Edge)
	ecfg, err := edgeapp.LoadConfig(getenv(eenv))
	if err != nil {
		t.Fatal(err)
	}
	edgeOps := make(chan string, 1)
	ecfg.OpsBound = func(a string) { edgeOps <- a }
	for i := range max(1, opts.Edges) {
		cfg := ecfg
		if i > 0 {
			cfg.OpsAddr, cfg.OpsBound = "", nil // one operations listener is enough for a test to read
		}
		p.EdgeURLs = append(p.EdgeURLs, Serve(t, "edge", func(ctx context.Context, ready func(string)) error {
			return edgeapp.Run(ctx, cfg, log, ready)
		}))
	}
	p.BaseURL = p.EdgeURLs[0]
	if _, bench := t.(*testing.B); !bench && !opts.NoContractCheck {
		p.BaseURL = contractProxy(t, p.BaseURL)
	}
	if opts.Ops {
		p.BookingOpsURL, p.EdgeOpsURL = "http://"+loopback(<-bookingOps), "http://"+loopback(<-edgeOps)
	}
	return p
}

// webhookSecret signs the simulator's webhooks to booking.
const webhookSecret = "whsec_platformtest_0123456789"

// withParam adds a connection parameter to a Postgres URL (or key=value DSN).
func withParam(dbURL, k, v string) string {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return dbURL + " " + k + "=" + v
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// DeleteShowsAfter deletes, when the test ends, the Redis keys of every show recorded in the database at dbURL,
// and any other keys named, on the Redis env names as the services read it (REDIS_CLUSTER_ADDRS, else REDIS_URL,
// else the shared one). Booking and the waiting room write a show's keys until they stop, and cleanups run last in,
// first out: register it before starting them. Shows are the services' to name, so a test cannot put them under a
// key prefix of its own; this keeps the shared Redis clean of them all the same.
func DeleteShowsAfter(t testing.TB, dbURL string, env map[string]string, keys ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var cluster []string
		if a := env["REDIS_CLUSTER_ADDRS"]; a != "" {
			cluster = strings.Split(a, ",")
		}
		rdb, err := driver.OpenRedis(sharedRedis(env["REDIS_URL"]), cluster, 4)
		if err != nil {
			t.Logf("platformtest: Redis for the cleanup: %v", err)
			return
		}
		defer rdb.Close()
		for _, k := range keys {
			rdb.Del(ctx, k)
		}
		for _, show := range showsOnRecord(ctx, dbURL) {
			if err := redistest.DeleteShow(ctx, rdb, show); err != nil {
				t.Logf("platformtest: deleting show %s's keys: %v", show, err)
			}
		}
	})
}

// sharedRedis is url, else the environment's REDIS_URL, else the machine's Redis.
func sharedRedis(url string) string {
	if url == "" {
		url = os.Getenv("REDIS_URL")
	}
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	return url
}

// showsOnRecord lists the shows in the platform's database; nothing when it cannot be read.
func showsOnRecord(ctx context.Context, dbURL string) []string {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id FROM shows")
	if err != nil {
		return nil
	}
	shows, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	return shows
}

// warnings keeps what the services log, up to maxWarnings bytes (the first ones: a failure's cause comes before
// its echoes).
type warnings struct {
	mu sync.Mutex
	b  bytes.Buffer
}

const maxWarnings = 256 << 10

func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() < maxWarnings {
		w.b.Write(p)
	}
	return len(p), nil
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() == 0 {
		return "(none)"
	}
	return w.b.String()
}
