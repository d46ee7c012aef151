package app

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flashseat/flashseat/edge"
)

// Config is everything the edge reads from its environment. LoadConfig fills the defaults, so `make run` works
// with no variables set.
type Config struct {
	Addr            string        // EDGE_ADDR, default :8080
	BookingURL      *url.URL      // BOOKING_URL, default http://127.0.0.1:8081
	RedisURL        string        // REDIS_URL, default redis://127.0.0.1:6379/0
	DialTimeout     time.Duration // UPSTREAM_DIAL_TIMEOUT, default 2s
	HeaderTimeout   time.Duration // UPSTREAM_HEADER_TIMEOUT, default 15s: waiting for booking's response headers
	UpstreamTimeout time.Duration // UPSTREAM_TIMEOUT, default 30s: a whole non-streamed exchange
	MaxIdleConns    int           // UPSTREAM_MAX_IDLE_CONNS, default 512: keep-alive pool to booking
	IdleConnTimeout time.Duration // UPSTREAM_IDLE_CONN_TIMEOUT, default 30s
	StreamHeartbeat time.Duration // STREAM_HEARTBEAT, default 15s
	BodyLimit       int           // BODY_LIMIT bytes, default 1 MiB
	ReadTimeout     time.Duration // CLIENT_READ_TIMEOUT, default 15s
	IdleTimeout     time.Duration // CLIENT_IDLE_TIMEOUT, default 75s
	ShutdownTimeout time.Duration // SHUTDOWN_TIMEOUT, default 10s: drain deadline
	TrustedProxies  edge.TrustedProxies
}

// LoadConfig reads the configuration through getenv (os.Getenv in main, a map in tests) and validates it.
func LoadConfig(getenv func(string) string) (Config, error) {
	l := loader{getenv: getenv}
	cfg := Config{
		Addr:            l.str("EDGE_ADDR", ":8080"),
		RedisURL:        l.str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		DialTimeout:     l.duration("UPSTREAM_DIAL_TIMEOUT", 2*time.Second),
		HeaderTimeout:   l.duration("UPSTREAM_HEADER_TIMEOUT", 15*time.Second),
		UpstreamTimeout: l.duration("UPSTREAM_TIMEOUT", 30*time.Second),
		MaxIdleConns:    l.integer("UPSTREAM_MAX_IDLE_CONNS", 512),
		IdleConnTimeout: l.duration("UPSTREAM_IDLE_CONN_TIMEOUT", 30*time.Second),
		StreamHeartbeat: l.duration("STREAM_HEARTBEAT", 15*time.Second),
		BodyLimit:       l.integer("BODY_LIMIT", 1<<20),
		ReadTimeout:     l.duration("CLIENT_READ_TIMEOUT", 15*time.Second),
		IdleTimeout:     l.duration("CLIENT_IDLE_TIMEOUT", 75*time.Second),
		ShutdownTimeout: l.duration("SHUTDOWN_TIMEOUT", 10*time.Second),
	}
	if u, err := url.Parse(l.str("BOOKING_URL", "http://127.0.0.1:8081")); err != nil || u.Host == "" ||
		(u.Scheme != "http" && u.Scheme != "https") {
		l.fail("BOOKING_URL must be an http(s) URL")
	} else {
		cfg.BookingURL = u
	}
	tp, err := edge.ParseTrustedProxies(l.str("TRUSTED_PROXIES", ""))
	if err != nil {
		l.fail("TRUSTED_PROXIES: " + err.Error())
	}
	cfg.TrustedProxies = tp
	if cfg.UpstreamTimeout < cfg.HeaderTimeout {
		l.fail("UPSTREAM_TIMEOUT must not be shorter than UPSTREAM_HEADER_TIMEOUT")
	}
	if cfg.MaxIdleConns < 1 || cfg.BodyLimit < 1 {
		l.fail("UPSTREAM_MAX_IDLE_CONNS and BODY_LIMIT must be positive")
	}
	if len(l.errs) > 0 {
		return Config{}, fmt.Errorf("edge config: %w", errors.Join(l.errs...))
	}
	return cfg, nil
}

// loader reads typed variables and collects every problem, so one start-up reports them all.
type loader struct {
	getenv func(string) string
	errs   []error
}

func (l *loader) fail(msg string) { l.errs = append(l.errs, errors.New(msg)) }

func (l *loader) str(name, def string) string {
	if v := strings.TrimSpace(l.getenv(name)); v != "" {
		return v
	}
	return def
}

func (l *loader) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(l.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		l.fail(name + " must be a duration such as 10s")
		return def
	}
	return d
}

func (l *loader) integer(name string, def int) int {
	v := strings.TrimSpace(l.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		l.fail(name + " must be an integer")
		return def
	}
	return n
}

func (l *loader) float(name string, def float64) float64 {
	v := strings.TrimSpace(l.getenv(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		l.fail(name + " must be a non-negative number")
		return def
	}
	return f
}
