package app

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/env"
	"github.com/flashseat/flashseat/shared/shard"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom/siteverify"
)

// Config is everything the edge reads from its environment. LoadConfig fills the defaults, so `make run` works
// with no variables set.
type Config struct {
	Addr string // EDGE_ADDR, default :8080
	// OpsAddr (OPS_ADDR) serves /metrics, /debug/pprof, /healthz and /readyz away from the public port; unset, they
	// are not served there (make run, compose and the cluster set it). OpsBound, if set (tests), is told the
	// address once it listens.
	OpsAddr    string
	OpsBound   func(addr string)
	BookingURL *url.URL // BOOKING_URL, default http://127.0.0.1:8081
	RedisURL   string   // REDIS_URL, default redis://127.0.0.1:6379/0
	// DATABASE_URL, default the local dev database: the record of every show's queue settings, admissions,
	// fairness draw and cursor (Redis is their cache), and the operators' audit log. The same database as
	// booking's.
	DatabaseURL string
	// DatabaseShards (DATABASE_SHARDS, shared/shard's Parse): booking's shards. Each show's queue record, queue
	// outbox, bypass codes and audit entries live on the show's shard; DATABASE_URL keeps the catalog and what
	// belongs to no show. Edge and booking must be given the same list.
	DatabaseShards []shard.Shard
	// DatabasePooler (DATABASE_POOLER) is "pgbouncer" when DATABASE_URL points at PgBouncer in transaction
	// pooling mode (driver.PostgresConfig says what changes); empty for PostgreSQL itself.
	DatabasePooler string
	// REDIS_POOL_SIZE, default 256: connections to Redis (to each node of a cluster). A connection carries one
	// command at a time, so a flash crowd's gate reads need rate × round trip of them: 20,000 gated requests a
	// second at 5 ms under load are 100, where go-redis's default of 10 per CPU would queue all but 20 of them
	// behind their 2 s deadline. 256 leaves room above that; connections are dialled only as the crowd needs them
	// (32 KiB of buffers each way), and three replicas' 768 stay far under Redis's 10,000 clients beside booking's.
	RedisPoolSize int
	// REDIS_CLUSTER_ADDRS, comma-separated host:port of a Redis Cluster's nodes; when set it replaces REDIS_URL.
	RedisClusterAddrs []string
	DialTimeout       time.Duration       // UPSTREAM_DIAL_TIMEOUT, default 2s
	HeaderTimeout     time.Duration       // UPSTREAM_HEADER_TIMEOUT, default 15s: waiting for booking's response headers
	UpstreamTimeout   time.Duration       // UPSTREAM_TIMEOUT, default 30s: a whole non-streamed exchange
	MaxIdleConns      int                 // UPSTREAM_MAX_IDLE_CONNS, default 512: keep-alive pool to booking
	IdleConnTimeout   time.Duration       // UPSTREAM_IDLE_CONN_TIMEOUT, default 30s
	StreamHeartbeat   time.Duration       // STREAM_HEARTBEAT, default 15s
	BodyLimit         int                 // BODY_LIMIT bytes, default 1 MiB
	IdleTimeout       time.Duration       // CLIENT_IDLE_TIMEOUT, default 75s
	ShutdownTimeout   time.Duration       // SHUTDOWN_TIMEOUT, default 10s: drain deadline
	TrustedProxies    edge.TrustedProxies // TRUSTED_PROXIES: CIDRs whose X-Forwarded-For is believed (a CDN)

	// ReadHeaderTimeout (CLIENT_HEADER_TIMEOUT, default 5s) is how long a client has to send a request's line and
	// headers: from the connection's opening, or from the first byte of a kept-alive connection's next request.
	// A phone on a bad 3G link sends ~1 KB of headers within a second or two (one segment, a retransmission
	// included); a slow-loris that opens connections and never finishes its headers holds each only this long.
	ReadHeaderTimeout time.Duration
	// ReadTimeout (CLIENT_READ_TIMEOUT, default 15s) is how long a client has to send a request's body once its
	// headers are in: a body up to BODY_LIMIT on a slow uplink needs longer than headers do.
	ReadTimeout time.Duration

	// Admission keys. AdmissionKey signs (ADMISSION_SIGNING_KEY, a base64 32-byte Ed25519 seed, with
	// ADMISSION_KEY_ID); AdmissionPrevious (ADMISSION_PREVIOUS_KEYS, "kid:base64url-public-key,...") are still
	// accepted and published during a rotation. AdmissionPreviousSigning (ADMISSION_PREVIOUS_SIGNING_KEYS,
	// "kid:base64-seed,...") are previous keys given whole: accepted and published too, and the place receipts
	// MACed under them still verify. Generated when unset, for development only.
	AdmissionKey             token.Key
	AdmissionPrevious        []token.PublicKey
	AdmissionPreviousSigning []token.Key
	AdmissionKeyGenerated    bool

	// User tokens: AUTH_SECRET (HS256, at least 32 bytes; generated when unset) and optionally an external
	// issuer (AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE).
	AuthSecret          []byte
	AuthSecretGenerated bool
	AuthExternal        *token.External

	// Rate limits per route class (RATE_PER_IP, RATE_PER_IP_BURST, RATE_PER_USER, RATE_PER_USER_BURST for the
	// API; the same with RATE_QUEUE_ for the waiting room). Zero disables a limit.
	Limits      map[edge.Class]LimitConfig
	RateMaxKeys int           // RATE_MAX_KEYS, default 100000: buckets kept per limiter (~150 B each)
	RateExempt  edge.Prefixes // RATE_EXEMPT, default loopback; "none" limits every address
	TokenLeeway time.Duration // TOKEN_LEEWAY, default 5s: clock skew tolerated between replicas

	Waitroom WaitroomConfig // ADMIN_TOKEN, QUEUE_*, COOKIE_SECURE: the mounted waiting room's settings
	Console  ConsoleConfig  // CONSOLE_*: the operator console at /admin
	// Events is the lifecycle event stream queue events are appended to (EVENTS_STREAM, EVENTS_MAXLEN,
	// EVENTS_MAX_AGE; events.go), the one booking relays its events to.
	Events eventstream.Config
	// The queue outbox's relay into that stream: EventsRelayEvery (EVENTS_RELAY_INTERVAL, default 100ms) is how
	// often it looks for new queue events; published ones are deleted after EventsOutboxKeep (EVENTS_OUTBOX_KEEP,
	// default 72h).
	EventsRelayEvery time.Duration
	EventsOutboxKeep time.Duration
	// HumanCheck verifies the human check a show's join may require (HUMAN_CHECK, HUMAN_CHECK_*; humancheck.go):
	// nil, and Enabled false, when HUMAN_CHECK is unset.
	HumanCheck *siteverify.Verifier
}

// DefaultDatabaseURL is booking's default too: `make services` creates it.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable"

// LimitConfig are the limits of one route class, in requests per second.
type LimitConfig struct {
	PerIP, PerUser           float64
	PerIPBurst, PerUserBurst int
}

// LoadConfig reads the configuration through getenv (os.Getenv in main, a map in tests) and validates it.
func LoadConfig(getenv func(string) string) (Config, error) {
	l := loader{env.New(getenv)}
	cfg := Config{
		Addr:            l.String("EDGE_ADDR", ":8080"),
		OpsAddr:         l.String("OPS_ADDR", ""),
		RedisURL:        l.String("REDIS_URL", "redis://127.0.0.1:6379/0"),
		DatabaseURL:     l.String("DATABASE_URL", DefaultDatabaseURL),
		DatabasePooler:  l.String("DATABASE_POOLER", ""),
		DialTimeout:     l.Duration("UPSTREAM_DIAL_TIMEOUT", 2*time.Second),
		HeaderTimeout:   l.Duration("UPSTREAM_HEADER_TIMEOUT", 15*time.Second),
		UpstreamTimeout: l.Duration("UPSTREAM_TIMEOUT", 30*time.Second),
		MaxIdleConns:    l.Int("UPSTREAM_MAX_IDLE_CONNS", 512),
		IdleConnTimeout: l.Duration("UPSTREAM_IDLE_CONN_TIMEOUT", 30*time.Second),
		StreamHeartbeat: l.Duration("STREAM_HEARTBEAT", 15*time.Second),
		BodyLimit:       l.Int("BODY_LIMIT", 1<<20),
		IdleTimeout:     l.Duration("CLIENT_IDLE_TIMEOUT", 75*time.Second),
		ShutdownTimeout: l.Duration("SHUTDOWN_TIMEOUT", 10*time.Second),
	}
	// Both positive: zero would let a client hold a connection for ever without finishing its request.
	cfg.ReadHeaderTimeout = l.PositiveDuration("CLIENT_HEADER_TIMEOUT", 5*time.Second)
	cfg.ReadTimeout = l.PositiveDuration("CLIENT_READ_TIMEOUT", 15*time.Second)
	if err := driver.CheckPooler(cfg.DatabasePooler); err != nil {
		l.Fail("%w", err)
	}
	if shards, err := shard.Parse(l.String("DATABASE_SHARDS", "")); err != nil {
		l.Fail("%v", err)
	} else {
		cfg.DatabaseShards = shards
	}
	if u, err := url.Parse(cfg.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		if !strings.Contains(cfg.DatabaseURL, "dbname=") { // a key=value DSN is fine too
			l.Fail("DATABASE_URL must be a postgres:// URL or a key=value DSN")
		}
	}
	if u, err := url.Parse(l.String("BOOKING_URL", "http://127.0.0.1:8081")); err != nil || u.Host == "" ||
		(u.Scheme != "http" && u.Scheme != "https") {
		l.Fail("BOOKING_URL must be an http(s) URL")
	} else {
		cfg.BookingURL = u
	}
	if cfg.OpsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.OpsAddr); err != nil {
			l.Fail("OPS_ADDR must be host:port")
		}
	}
	cfg.RedisClusterAddrs = l.List("REDIS_CLUSTER_ADDRS")
	cfg.RedisPoolSize = l.PositiveInt("REDIS_POOL_SIZE", 256)
	for _, a := range cfg.RedisClusterAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			l.Fail("REDIS_CLUSTER_ADDRS: %s is not host:port", a)
		}
	}
	tp, err := edge.ParseTrustedProxies(l.String("TRUSTED_PROXIES", ""))
	if err != nil {
		l.Fail("TRUSTED_PROXIES: %v", err)
	}
	cfg.TrustedProxies = tp
	l.admissionKeys(&cfg)
	l.userAuth(&cfg)
	l.waitroom(&cfg)
	l.console(&cfg)
	l.events(&cfg)
	l.humanCheck(&cfg)
	cfg.Limits = map[edge.Class]LimitConfig{
		// The API: a fan browsing, holding and paying needs a few requests a second; a NATed office or campus
		// shares one address, hence the generous per-address rate.
		edge.ClassAPI: {
			PerIP: l.Float("RATE_PER_IP", 200), PerIPBurst: l.Int("RATE_PER_IP_BURST", 400),
			PerUser: l.Float("RATE_PER_USER", 10), PerUserBurst: l.Int("RATE_PER_USER_BURST", 30),
		},
		// The waiting room: a whole crowd arrives in the same second and every refusal there is a fan turned
		// away from a fair queue, so these are higher, and bursts large.
		edge.ClassQueue: {
			PerIP: l.Float("RATE_QUEUE_PER_IP", 1000), PerIPBurst: l.Int("RATE_QUEUE_PER_IP_BURST", 5000),
			PerUser: l.Float("RATE_QUEUE_PER_USER", 20), PerUserBurst: l.Int("RATE_QUEUE_PER_USER_BURST", 60),
		},
	}
	cfg.RateMaxKeys = l.Int("RATE_MAX_KEYS", 100000)
	cfg.TokenLeeway = l.Duration("TOKEN_LEEWAY", 5*time.Second)
	switch ex := l.String("RATE_EXEMPT", "127.0.0.0/8,::1"); ex {
	case "none":
	default:
		p, err := edge.ParsePrefixes(ex)
		if err != nil {
			l.Fail("RATE_EXEMPT: %v", err)
		}
		cfg.RateExempt = p
	}
	if cfg.UpstreamTimeout < cfg.HeaderTimeout {
		l.Fail("UPSTREAM_TIMEOUT must not be shorter than UPSTREAM_HEADER_TIMEOUT")
	}
	if cfg.MaxIdleConns < 1 || cfg.BodyLimit < 1 {
		l.Fail("UPSTREAM_MAX_IDLE_CONNS and BODY_LIMIT must be positive")
	}
	if err := l.Err(); err != nil {
		return Config{}, fmt.Errorf("edge config: %w", err)
	}
	return cfg, nil
}

// admissionKeys reads the signing key and the previous keys, or generates a key for development.
func (l *loader) admissionKeys(cfg *Config) {
	seed := l.String("ADMISSION_SIGNING_KEY", "")
	if seed == "" {
		k, err := token.GenerateKey()
		if err != nil {
			l.Fail("generating an admission key: %v", err)
			return
		}
		if id := l.String("ADMISSION_KEY_ID", ""); id != "" {
			k.ID = id
		}
		cfg.AdmissionKey, cfg.AdmissionKeyGenerated = k, true
	} else {
		k, err := token.ParseSeed(l.String("ADMISSION_KEY_ID", ""), seed)
		if err != nil {
			l.Fail("ADMISSION_SIGNING_KEY: %v", err) // the error never contains the seed
			return
		}
		cfg.AdmissionKey = k
	}
	for _, pair := range strings.Split(l.String("ADMISSION_PREVIOUS_KEYS", ""), ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		i := strings.LastIndex(pair, ":") // base64url has no colon; a kid might
		if i <= 0 {
			l.Fail("ADMISSION_PREVIOUS_KEYS: want kid:base64url-public-key pairs")
			continue
		}
		pub, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(pair[i+1:], "="))
		if err != nil || len(pub) != ed25519.PublicKeySize {
			l.Fail("ADMISSION_PREVIOUS_KEYS: key %s is not a base64url Ed25519 public key", pair[:i])
			continue
		}
		cfg.AdmissionPrevious = append(cfg.AdmissionPrevious, token.PublicKey{ID: pair[:i], Key: pub})
	}
	for _, pair := range strings.Split(l.String("ADMISSION_PREVIOUS_SIGNING_KEYS", ""), ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		i := strings.LastIndex(pair, ":")
		if i <= 0 {
			l.Fail("ADMISSION_PREVIOUS_SIGNING_KEYS: want kid:base64-seed pairs")
			continue
		}
		k, err := token.ParseSeed(pair[:i], pair[i+1:])
		if err != nil {
			l.Fail("ADMISSION_PREVIOUS_SIGNING_KEYS: key %s: %v", pair[:i], err) // the error never contains the seed
			continue
		}
		cfg.AdmissionPreviousSigning = append(cfg.AdmissionPreviousSigning, k)
	}
}

// userAuth reads how user tokens are verified.
func (l *loader) userAuth(cfg *Config) {
	if s := l.String("AUTH_SECRET", ""); s != "" {
		if len(s) < token.MinSecretLen {
			l.Fail("AUTH_SECRET must be at least %d bytes", token.MinSecretLen)
		}
		cfg.AuthSecret = []byte(s)
	} else {
		b := make([]byte, 48)
		if _, err := rand.Read(b); err != nil {
			l.Fail("generating AUTH_SECRET: %v", err)
		}
		cfg.AuthSecret, cfg.AuthSecretGenerated = []byte(base64.RawURLEncoding.EncodeToString(b)), true
	}
	if u := l.String("AUTH_JWKS_URL", ""); u != "" {
		cfg.AuthExternal = &token.External{JWKSURL: u, Issuer: l.String("AUTH_ISSUER", ""),
			Audience: l.String("AUTH_AUDIENCE", "")}
	}
}

// loader reads the edge's variables (shared/infra/env's rules), with the edge's own parts as methods.
type loader struct{ *env.Reader }
