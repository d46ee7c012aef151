// Package http serves the edge with fiber: request ids and client addresses, rate limits, the admission gate,
// operations endpoints, and the reverse proxy to booking behind them all. Its one error table (errors.go) turns
// every failure into RFC 9457 problem+json.
package http

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/edge/ratelimit"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/shared/token"
)

// Config assembles a Server.
type Config struct {
	Proxy    ProxyConfig
	Trusted  edge.TrustedProxies
	Registry *prometheus.Registry
	Log      *slog.Logger
	Ready    []store.Check // all must pass for /readyz; the upstream's /healthz is always one
	// BodyLimit caps request bodies; larger ones get 413.
	BodyLimit int
	// IdleTimeout closes idle client keep-alive connections.
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds the wait for a request's line and headers: from the connection's opening for its
	// first request, from the first byte for the next ones. A client that has not sent them whole by then (a
	// slow-loris) is cut off. Zero: ReadTimeout bounds them, with the body.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body, from the end of its headers: an upload on a slow link may
	// take longer than the headers.
	ReadTimeout time.Duration

	// Users verifies Bearer user tokens; nil disables per-user limits and the gate's user checks.
	Users *token.UserVerifier
	// Gate decides admission for protected routes; nil turns the gate off.
	Gate *admission.Gate
	// Admission verifies admission tokens on routes whose show has its queue off (paying).
	Admission *token.Verifier
	// Limits per route class; a class without an entry is not limited.
	Limits map[edge.Class]Limits
	// RateExempt addresses are not limited by address.
	RateExempt edge.Prefixes
}

// Server is the edge's fiber application.
type Server struct {
	App *fiber.App

	cfg     Config
	log     *slog.Logger
	metrics *Metrics
	proxy   *Proxy
	users   *token.UserCache // verified user tokens; nil when Users is

	stopStreams context.CancelFunc
}

// New builds the server with its middleware and operations routes. Routes added to App afterwards (the waiting
// room) sit behind the middleware; call Forward last, to send everything else to the upstream.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, log: cfg.Log, metrics: NewMetrics(cfg.Registry)}
	if cfg.Users != nil {
		s.users = token.NewUserCache(cfg.Users, userCacheSize, userCacheTTL)
	}
	streams, stop := context.WithCancel(context.Background())
	s.stopStreams = stop
	s.proxy = NewProxy(streams, cfg.Proxy, cfg.Trusted, s.metrics, cfg.Log)
	s.cfg.Ready = append(append([]store.Check(nil), cfg.Ready...), store.Check{Name: upstreamCheck, Ping: s.proxy.Healthy})
	headerTimeout := cfg.ReadHeaderTimeout
	if headerTimeout <= 0 {
		headerTimeout = cfg.ReadTimeout
	}
	s.App = fiber.New(fiber.Config{
		AppName:               "flashseat-edge",
		DisableStartupMessage: true,
		ErrorHandler:          s.handleError,
		BodyLimit:             cfg.BodyLimit,
		// fasthttp's ReadTimeout is one deadline for a request's headers and body, armed when a connection opens
		// (or, kept alive, at the next request's first byte). It is the header timeout here; HeaderReceived below
		// gives the body its own from the end of the headers.
		ReadTimeout: headerTimeout,
		IdleTimeout: cfg.IdleTimeout,
		// No WriteTimeout: fasthttp applies it to a whole response, and a proxied event stream lasts minutes.
		// Keep fiber's header parsing strict but do not let it trust forwarding headers; identify does that.
		EnableTrustedProxyCheck: true,
	})
	// The waiting room's event streams take over their connections (waitroom/http, events.go); kept by the server,
	// a held stream needs no goroutine of its own. Nothing else the edge serves hijacks a connection.
	s.App.Server().KeepHijackedConns = true
	// Neither deadline reaches a response: fasthttp clears the read deadline of a hijacked connection, and nothing
	// reads a client's connection while a proxied stream is written to it.
	if cfg.ReadTimeout > 0 {
		body := fasthttp.RequestConfig{ReadTimeout: cfg.ReadTimeout}
		s.App.Server().HeaderReceived = func(*fasthttp.RequestHeader) fasthttp.RequestConfig { return body }
	}
	for class, l := range cfg.Limits {
		for key, lim := range map[string]*ratelimit.Limiter{"ip": l.PerIP, "user": l.PerUser} {
			if lim.Enabled() {
				cfg.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
					Name:        "edge_ratelimit_keys",
					Help:        "Rate-limit buckets held (bounded by RATE_MAX_KEYS), by route class and key.",
					ConstLabels: prometheus.Labels{"class": class.String(), "key": key},
				}, func() float64 { return float64(lim.Len()) }))
			}
		}
	}
	// recover sits inside observe: a panicking handler becomes an error that observe renders (a 500 problem) and
	// counts, and the process goes on serving everyone else, as booking does.
	s.App.Use(identify(cfg.Trusted), s.observe, recover.New(recover.Config{
		EnableStackTrace: true,
		StackTraceHandler: func(c *fiber.Ctx, e any) {
			s.log.Error("panic serving request", "panic", e, "path", c.Path(), "requestId", RequestID(c))
		},
	}), s.authenticate, s.limit, s.gate)
	s.App.Get("/queue/:showId/gate", s.gateCheck)
	s.App.Get("/healthz", s.healthz)
	s.App.Get("/readyz", s.readyz)
	// /metrics and pprof are on the operations address (OPS_ADDR, shared/infra/ops), never on the public port.
	return s
}

// Serve answers on ln until Shutdown. Methods fiber does not route are answered here with a problem, since fiber
// itself would answer them in plain text.
func (s *Server) Serve(ln net.Listener) error {
	s.App.Server().Handler = knownMethods(s.App.Handler())
	return s.App.Listener(lingerListener{ln})
}

// Forward sends every request no earlier route answered to the upstream, unchanged.
func (s *Server) Forward() {
	s.App.All("/*", s.proxy.Handle)
}

// Proxy is the server's upstream proxy.
func (s *Server) Proxy() *Proxy { return s.proxy }

// Shutdown ends proxied streams, then stops accepting and drains in-flight requests until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopStreams()
	err := s.App.ShutdownWithContext(ctx)
	s.proxy.Close()
	return err
}

func (s *Server) healthz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"status": "ok"})
}

// upstreamCheck names booking's readiness check: the one dependency that is not a store.
const upstreamCheck = "booking"

// The verified-token cache's bounds: entries are about 300 bytes with the token, and a key an external issuer
// retires stops being trusted within userCacheTTL.
const (
	userCacheSize = 100000
	userCacheTTL  = 10 * time.Second
)

// readyz answers 200 only when every dependency answers, so a load balancer sends no fans to an edge that
// cannot gate or forward them.
func (s *Server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	checks, err := store.Probe(ctx, s.cfg.Ready)
	if err != nil {
		s.log.Warn("readiness check failed", "err", err, "requestId", RequestID(c))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if err != nil {
		// A store down is an outage of this edge (store-unavailable); booking down alone is an upstream's.
		slug := problem.ServiceUnavailable
		for name, state := range checks {
			if state != "ok" && name != upstreamCheck {
				slug = problem.StoreUnavailable
			}
		}
		return problem.New(http.StatusServiceUnavailable, slug, "not ready").With("checks", checks).WithRetryAfter(1)
	}
	return c.JSON(fiber.Map{"status": "ready", "checks": checks})
}
