// Package app wires booking into a runnable service: configuration from the environment, the stores, the Service
// and its background workers, the HTTP server, and a graceful shutdown. cmd/booking calls Run; tests call it too,
// on ":0".
package app

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"github.com/flashseat/flashseat/booking/ticket/wallet"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/env"
	pulseredis "github.com/flashseat/flashseat/shared/pulse/redis"
	"github.com/flashseat/flashseat/shared/shard"
	"github.com/flashseat/flashseat/shared/token"
)

// Config is everything booking reads from its environment. LoadConfig fills in the defaults, so `make run` works
// with no variables set.
type Config struct {
	Addr string // BOOKING_ADDR, default :8081
	// OpsAddr (OPS_ADDR) serves /metrics, /debug/pprof, /healthz and /readyz away from the public port; unset, they
	// are not served (make run, compose and the cluster set it).
	OpsAddr string
	// OpsBound, if set (tests), is told the operations address once it listens.
	OpsBound    func(addr string)
	DatabaseURL string // DATABASE_URL
	// DatabaseShards (DATABASE_SHARDS) splits the ledger by show over these databases (shared/shard's Parse
	// gives the format); DATABASE_URL keeps the catalog. Empty: everything on DATABASE_URL.
	DatabaseShards []shard.Shard
	// DatabaseReadURL (DATABASE_READ_URL) is a streaming replica of DATABASE_URL's database that serves the reads
	// that may lag (booking.MayLag: the catalog's directory, a fan's list of bookings, the operator's figures)
	// while it is no more than DatabaseReadMaxLag (DATABASE_READ_MAX_LAG, default 1s) behind. With
	// DATABASE_SHARDS it replicates the catalog database only; the shards' reads go to the shards. Empty: every
	// read goes to the primary.
	DatabaseReadURL    string
	DatabaseReadMaxLag time.Duration
	// DatabasePooler (DATABASE_POOLER) is "pgbouncer" when DATABASE_URL (and each shard's URL) points at
	// PgBouncer in transaction pooling mode (driver.PostgresConfig says what changes); empty for PostgreSQL itself.
	DatabasePooler    string
	RedisURL          string        // REDIS_URL, default redis://127.0.0.1:6379/0
	RedisClusterAddrs []string      // REDIS_CLUSTER_ADDRS, comma-separated; when set, a cluster client is used
	RedisPoolSize     int           // REDIS_POOL_SIZE, default 512 (per cluster node): the hot-show benchmark's size
	HoldTTL           time.Duration // HOLD_TTL, default 10m
	// QueueMode (QUEUE_MODE, default off) is the site-wide queue mode of shows whose operator set none; edge and
	// booking must be given the same.
	QueueMode string
	// PulseNamespace (PULSE_NAMESPACE) is where this replica publishes its pulse for the edge's autotune.
	PulseNamespace    string
	MaxSeats          int           // MAX_SEATS_PER_BOOKING, default 10
	ReconcileInterval time.Duration // RECONCILE_INTERVAL, default 30s
	RefundWindow      time.Duration // REFUND_WINDOW, default 48h (used by payments)
	// ReportFanRetention (REPORT_FAN_RETENTION, default 720h: 30 days) is how long after a show's after-sale report
	// is summarised (once the show starts) the per-fan rows it was built from are kept; ReportSweep
	// (REPORT_SWEEP_INTERVAL, default 10m) how often summaries and deletions are looked for.
	ReportFanRetention time.Duration
	ReportSweep        time.Duration
	ShutdownTimeout    time.Duration // SHUTDOWN_TIMEOUT, default 10s
	BodyLimit          int           // BODY_LIMIT bytes, default 64 KiB
	// SeatStreamsPerPrefix (SEAT_STREAMS_PER_PREFIX, default 64) bounds the seat-map streams one address prefix
	// holds open on a replica; raise it for a crowd behind one carrier NAT. Each fan's own bound is 8.
	SeatStreamsPerPrefix int

	AdminToken          string // ADMIN_TOKEN; random (and unusable) when unset
	AdminTokenGenerated bool
	StaffToken          string // STAFF_TOKEN

	AuthSecret          []byte          // AUTH_SECRET, HS256 user tokens, at least 32 bytes; generated when unset
	AuthSecretGenerated bool            //
	AuthGuest           bool            // AUTH_GUEST, default true
	CookieSecure        bool            // COOKIE_SECURE: the fs_session cookie is Secure (behind TLS)
	AuthExternal        *token.External // AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE

	AdmissionJWKSURL string          // ADMISSION_JWKS_URL, default the edge's /.well-known/jwks.json
	AdmissionKeys    token.KeySource // set by tests instead of the URL
	TokenLeeway      time.Duration   // TOKEN_LEEWAY, default 5s

	SeedDemo bool       // SEED_DEMO, default false
	LogLevel slog.Level // LOG_LEVEL: debug, info, warn, error
	// GCPercent is the garbage collector's target (GOGC), default 400 where Go's is 100: booking keeps a small
	// live heap and allocates fast in a flash crowd, so at 100 it collects many times a second and every
	// collection stretches the latency of the requests it overlaps. -1 ("off") leaves it to GOMEMLIMIT.
	GCPercent int

	Payment  PaymentConfig    // PAYMENT_*, TICKET_SIGNING_KEY (payments.go)
	Events   EventsConfig     // EVENTS_* (events.go)
	Waitlist WaitlistSettings // WAITLIST_* (waitlist.go)
	Webhooks WebhookSettings  // WEBHOOK_* (webhooks.go)
	Notify   NotifyConfig     // SMTP_*, NOTIFY_WEBHOOK_* (notify.go)
	Passes   wallet.Config    // PASS_*: the Apple Wallet pass certificate; none, no passes (notify.go)
}

// DefaultDatabaseURL matches `make services`.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable"

// LoadConfig reads the configuration through getenv (os.Getenv in main, a map in tests) and validates it.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := env.New(getenv)
	cfg := Config{
		Addr:                 r.String("BOOKING_ADDR", ":8081"),
		OpsAddr:              r.String("OPS_ADDR", ""),
		DatabaseURL:          r.String("DATABASE_URL", DefaultDatabaseURL),
		DatabasePooler:       r.String("DATABASE_POOLER", ""),
		DatabaseReadURL:      r.String("DATABASE_READ_URL", ""),
		DatabaseReadMaxLag:   r.PositiveDuration("DATABASE_READ_MAX_LAG", postgres.DefaultMaxLag),
		RedisURL:             r.String("REDIS_URL", "redis://127.0.0.1:6379/0"),
		HoldTTL:              r.PositiveDuration("HOLD_TTL", 10*time.Minute),
		QueueMode:            r.String("QUEUE_MODE", admission.ModeOff),
		PulseNamespace:       r.String("PULSE_NAMESPACE", pulseredis.DefaultNamespace),
		MaxSeats:             r.IntIn("MAX_SEATS_PER_BOOKING", 10, 1, 100),
		ReconcileInterval:    r.PositiveDuration("RECONCILE_INTERVAL", 30*time.Second),
		RefundWindow:         r.PositiveDuration("REFUND_WINDOW", 48*time.Hour),
		ReportFanRetention:   r.PositiveDuration("REPORT_FAN_RETENTION", 30*24*time.Hour),
		ReportSweep:          r.PositiveDuration("REPORT_SWEEP_INTERVAL", 10*time.Minute),
		ShutdownTimeout:      r.PositiveDuration("SHUTDOWN_TIMEOUT", 10*time.Second),
		BodyLimit:            r.IntIn("BODY_LIMIT", 64<<10, 1<<10, 16<<20),
		SeatStreamsPerPrefix: r.IntIn("SEAT_STREAMS_PER_PREFIX", 64, 8, 1000000),
		AdminToken:           r.String("ADMIN_TOKEN", ""),
		StaffToken:           r.String("STAFF_TOKEN", ""),
		AuthGuest:            r.Bool("AUTH_GUEST", true),
		CookieSecure:         r.Bool("COOKIE_SECURE", false),
		AdmissionJWKSURL:     r.String("ADMISSION_JWKS_URL", "http://127.0.0.1:8080/.well-known/jwks.json"),
		TokenLeeway:          r.PositiveDuration("TOKEN_LEEWAY", 5*time.Second),
		SeedDemo:             r.Bool("SEED_DEMO", false),
	}
	cfg.RedisClusterAddrs = r.List("REDIS_CLUSTER_ADDRS")
	if shards, err := shard.Parse(r.String("DATABASE_SHARDS", "")); err != nil {
		r.Fail("%v", err)
	} else {
		cfg.DatabaseShards = shards
	}
	cfg.RedisPoolSize = r.PositiveInt("REDIS_POOL_SIZE", 512)
	cfg.Payment = loadPaymentConfig(r)
	cfg.Events = loadEventsConfig(r)
	cfg.Waitlist = loadWaitlistSettings(r)
	cfg.Webhooks = loadWebhookSettings(r)
	cfg.Notify = loadNotifyConfig(r)
	cfg.Passes = loadPassConfig(r)
	if cfg.OpsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.OpsAddr); err != nil {
			r.Fail("OPS_ADDR: %q is not host:port", cfg.OpsAddr)
		}
	}
	if err := driver.CheckPooler(cfg.DatabasePooler); err != nil {
		r.Fail("%w", err)
	}
	if cfg.HoldTTL < time.Second {
		r.Fail("HOLD_TTL must be at least 1s")
	}
	if !admission.ValidMode(cfg.QueueMode) {
		r.Fail("QUEUE_MODE must be off, always or threshold")
	}
	switch v := r.String("GOGC", "400"); v {
	case "off":
		cfg.GCPercent = -1
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			r.Fail("GOGC: %q is not a positive number or off", v)
		}
		cfg.GCPercent = n
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(r.String("LOG_LEVEL", "info"))); err != nil {
		r.Fail("LOG_LEVEL: %w", err)
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken, cfg.AdminTokenGenerated = random(32), true
	} else if len(cfg.AdminToken) < 16 {
		r.Fail("ADMIN_TOKEN must be at least 16 characters")
	}
	if cfg.StaffToken != "" && len(cfg.StaffToken) < 16 {
		r.Fail("STAFF_TOKEN must be at least 16 characters")
	}
	if s := r.String("AUTH_SECRET", ""); s != "" {
		cfg.AuthSecret = []byte(s)
		if len(cfg.AuthSecret) < token.MinSecretLen {
			r.Fail("AUTH_SECRET must be at least %d bytes", token.MinSecretLen)
		}
	} else {
		cfg.AuthSecret, cfg.AuthSecretGenerated = []byte(random(48)), true
	}
	if u := r.String("AUTH_JWKS_URL", ""); u != "" {
		cfg.AuthExternal = &token.External{JWKSURL: u, Issuer: r.String("AUTH_ISSUER", ""), Audience: r.String("AUTH_AUDIENCE", "")}
	}
	if err := r.Err(); err != nil {
		return Config{}, fmt.Errorf("booking config: %w", err)
	}
	return cfg, nil
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
