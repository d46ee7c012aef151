// Package http is booking's HTTP API on fiber: the public catalog, seat maps and their event stream, holds and
// bookings, the operator API, the seat-map page and the operations endpoints. Handlers parse, call the
// booking.Service and render; they return errors and never pick a status code themselves: the one table in
// errors.go maps domain errors to RFC 9457 problems, through fiber.Config{ErrorHandler}.
//
// Other parts of booking (payments) add their routes in their own files of this package, using Server's
// middleware (RequireUser, RequireAdmin, RequireStaff) and the same error table.
package http

import (
	"context"
	"github.com/flashseat/flashseat/booking/ticket/wallet"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/webhook"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/listener"
	"github.com/flashseat/flashseat/shared/pulse"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/shared/streamcap"
	"github.com/flashseat/flashseat/shared/token"
)

// SeatFeed delivers a show's seat events to stream clients; booking/redis's Hub implements it.
type SeatFeed interface {
	Subscribe(ctx context.Context, showID string) (<-chan []byte, func())
}

// Config wires a Server.
type Config struct {
	Service  *booking.Service
	Checkout *booking.Checkout // pay, refunds, tickets, check-in, webhooks (payment.go); nil leaves them out
	Passes   *wallet.Issuer    // Apple Wallet passes (ticketfiles.go); nil: no Add to Wallet, the pass is a 404
	// Gateway is what browsers are told of the payment gateway (GET /api/v1/payments/config).
	Gateway  PublicGateway
	Waitlist *booking.Waitlist   // sold-out shows' waitlists (waitlist.go); nil leaves them out
	Audit    *audit.Log          // the operator audit log (admin.go, audit.go); nil: changes are not recorded
	Users    *token.UserVerifier // verifies fans' user tokens
	Guests   *token.UserIssuer   // signs guest tokens; nil turns POST /api/v1/auth/guest off
	GuestTTL time.Duration       // default 24h
	// SecureCookies marks the cookies booking sets (fs_session) Secure: COOKIE_SECURE, behind TLS.
	SecureCookies bool
	AdminToken    string
	StaffToken    string
	Feed          SeatFeed
	Webhooks      *webhook.Service  // operators' webhooks (webhooks.go); nil leaves them out
	Contacts      *booking.Contacts // fans' contacts for notifications (contact.go); nil leaves them out
	// WaitlistFeed delivers the ids of fans whose waitlist entry changed, per show (booking/redis's
	// NewWaitlistHub); nil turns the waitlist stream off (503).
	WaitlistFeed SeatFeed
	Logger       *slog.Logger
	Registry     prometheus.Registerer // nil: metrics are not registered
	Metrics      *Metrics              // made (and registered with Registry) when nil
	Ready        []store.Check         // the stores /readyz pings; each is reported by name
	BodyLimit    int                   // default 64 KiB
	InFlight     int                   // hot requests (hold, seat map) run at once; default 32 per CPU
	Heartbeat    time.Duration         // seat stream comments, default 15s
	// SeatStreams bounds the seat-map streams this process holds open (stream.go).
	SeatStreams StreamCaps
	// Pulse records every answer (and each hold's latency) for the report the edge's autotune reads; nil: none.
	Pulse *pulse.Window
}

// holdRoute is the hold route's path, whose latency the pulse reports.
const holdRoute = "/api/v1/bookings/hold"

// Server is booking's HTTP API.
type Server struct {
	app     *fiber.App
	cfg     Config
	svc     *booking.Service
	log     *slog.Logger
	metrics *Metrics
	done    chan struct{}
	closing atomic.Bool
	streams streamcap.Caps   // open seat-map streams per identity and per address prefix
	lnMu    sync.Mutex       // orders Listen's registering ln against Shutdown's closing
	ln      net.Listener     // what Listen serves; nil before
	users   *token.UserCache // verified user tokens; nil when Users is
	limit   *limiter
}

// New builds the server and its routes.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = WithRequestIDs(cfg.Logger)
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 64 << 10
	}
	if cfg.GuestTTL <= 0 {
		cfg.GuestTTL = 24 * time.Hour
	}
	cfg.SeatStreams = cfg.SeatStreams.withDefaults()
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(cfg.Registry)
	}
	s := &Server{cfg: cfg, svc: cfg.Service, log: cfg.Logger, metrics: cfg.Metrics, done: make(chan struct{}),
		limit: newLimiter(cfg.InFlight, 5*time.Second)}
	if cfg.Users != nil {
		s.users = token.NewUserCache(cfg.Users, userCacheSize, userCacheTTL)
	}
	// The read timeouts need not be the edge's: fans never reach booking directly. The edge is its one public
	// client; it sends each request whole at once and cuts slow clients off itself (CLIENT_HEADER_TIMEOUT).
	s.app = fiber.New(fiber.Config{
		AppName:               "booking",
		BodyLimit:             cfg.BodyLimit,
		ErrorHandler:          s.errorHandler,
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		IdleTimeout:           90 * time.Second,
		ReadBufferSize:        16 << 10,
	})
	s.app.Use(recover.New(), s.requestContext)
	s.routes()
	return s
}

// App is the fiber app, for tests (app.Test) and for routes added by other packages.
func (s *Server) App() *fiber.App { return s.app }

// Metrics are the server's metrics, for the Service's hooks.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Listen serves on addr until Shutdown; ready is called with the bound address. Running out of descriptors pauses
// accepting rather than ending the server (package listener).
func (s *Server) Listen(addr string, ready func(addr string)) error {
	ln, err := listener.Listen(addr, s.log)
	if err != nil {
		return err
	}
	s.lnMu.Lock()
	if s.closing.Load() { // stopped before it started: serve nothing
		s.lnMu.Unlock()
		return ln.Close()
	}
	s.ln = ln
	s.lnMu.Unlock()
	if ready != nil {
		ready(ln.Addr().String())
	}
	return s.app.Listener(ln)
}

// Shutdown ends the event streams, stops accepting and drains in-flight requests until ctx ends. It may come at
// any moment of Listen: fasthttp closes only the listeners its Serve has registered, so a Shutdown that came
// before would leave Serve accepting for ever; Shutdown closes Listen's listener itself.
func (s *Server) Shutdown(ctx context.Context) error {
	s.lnMu.Lock()
	if s.closing.CompareAndSwap(false, true) {
		close(s.done)
	}
	ln := s.ln
	s.lnMu.Unlock()
	err := s.app.ShutdownWithContext(ctx)
	if ln != nil {
		ln.Close() // an error only says fasthttp closed it first
	}
	return err
}

func (s *Server) routes() {
	a := s.app
	a.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	a.Get("/readyz", s.readyz)

	a.Get("/", s.homePage)
	a.Get("/shows/:showId", s.showPage)
	a.Get("/checkout/:bookingId", s.checkoutPage)
	a.Get("/bookings", s.bookingsPage)
	a.Get("/bookings/:bookingId", s.bookingPage)
	a.Get("/transfers/:transferId", s.transferPage)
	a.Get("/gate", s.gatePage)
	a.Get("/gate/sw.js", s.gateServiceWorker)
	a.Get("/assets/:version/:file", s.assetHandler)

	v1 := a.Group("/api/v1")
	v1.Post("/auth/guest", s.guest)
	v1.Get("/me", s.RequireUser, s.me)
	v1.Get("/events", s.searchEvents)
	v1.Get("/shows/:showId", s.showDetail)
	v1.Get("/shows/:showId/seats", s.limit.handler, s.seatMap)
	v1.Get("/shows/:showId/seats/stream", s.seatStream)
	v1.Post("/bookings/hold", s.limit.handler, s.RequireUser, s.hold)
	v1.Get("/bookings/:bookingId", s.RequireUser, s.getBooking)
	v1.Delete("/bookings/:bookingId", s.RequireUser, s.cancel)
	v1.Get("/bookings", s.RequireUser, s.myBookings)

	s.paymentRoutes(a, v1)
	s.resaleRoutes(v1)
	s.waitlistRoutes(v1)
	s.webhookRoutes()
	s.contactRoutes(v1)

	admin := a.Group("/admin/v1", s.RequireAdmin)
	admin.Post("/venues", s.createVenue)
	admin.Post("/events", s.createEvent)
	admin.Post("/shows", s.createShow)
	admin.Get("/shows/:showId/stats", s.showStats)
	s.adminRoutes(admin)
}

func (s *Server) readyz(c *fiber.Ctx) error {
	if s.closing.Load() {
		return errShuttingDown
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	checks, err := store.Probe(ctx, s.cfg.Ready)
	c.Set(fiber.HeaderCacheControl, "no-store")
	if err != nil {
		s.log.WarnContext(c.UserContext(), "not ready", "err", err)
		return &notReadyError{checks: checks, err: err}
	}
	return c.JSON(fiber.Map{"status": "ready", "checks": checks})
}

type ctxKey int

const (
	requestIDKey ctxKey = iota
	requestCtxKey
)

// requestContext gives each request an id (the edge's X-Request-ID when it sent a sane one), puts it on the
// response and into the request's context for logs, and records the request's metrics.
func (s *Server) requestContext(c *fiber.Ctx) error {
	rc := &requestCtx{Context: c.UserContext()}
	if id := header(c, headerXRequestID); booking.ValidID(id) {
		rc.n = uint8(copy(rc.id[:], id)) // fiber reuses the header's buffer
	} else {
		rc.n = uint8(len(appendRequestID(rc.id[:0])))
	}
	c.Response().Header.SetCanonical(headerRequestID, rc.id[:rc.n])
	c.SetUserContext(rc)
	// fasthttp read the clock as it handed the request over, a moment ago: read it once, not twice, a request.
	start := c.Context().Time()
	if start.IsZero() {
		start = time.Now() // a handler called without fasthttp's server (benchmarks)
	}
	err := c.Next()
	if err != nil {
		if herr := s.errorHandler(c, err); herr != nil {
			return herr
		}
	}
	route := c.Route()
	status := c.Response().StatusCode()
	s.metrics.observe(route, c.Method(), status, time.Since(start))
	if s.cfg.Pulse != nil {
		now := time.Now()
		s.cfg.Pulse.Observe(route.Path == holdRoute, status, now.Sub(start), now)
	}
	if s.log.Enabled(c.UserContext(), slog.LevelDebug) {
		s.log.DebugContext(c.UserContext(), "request", "method", c.Method(), "route", route.Path,
			"status", status, "duration_ms", time.Since(start).Milliseconds())
	}
	return nil
}

// Request ids are a random per-process prefix and a counter: unique across replicas in practice, and cheaper
// than reading the system's randomness on every request.
var (
	requestPrefix = booking.NewID("")[:10]
	requestSeq    atomic.Uint64
)

var headerRequestID = []byte(fiber.HeaderXRequestID)

// appendRequestID appends a new request id to b: 10 characters of prefix and at most 13 of counter.
func appendRequestID(b []byte) []byte {
	return strconv.AppendUint(append(b, requestPrefix...), requestSeq.Add(1), 36)
}

// requestCtx is a request's context: fiber's user context, the request id and the caller's user id. The id lives
// in the context's own array, made into a string only when asked for (by a log record): one allocation a request
// where an id string, its boxing and a context.WithValue made three. The user id (RequireUser) lives here too: as
// one of fiber's Locals it was boxed, one more allocation a request.
type requestCtx struct {
	context.Context
	user string
	n    uint8
	id   [64]byte // booking.ValidID's longest
}

func (c *requestCtx) Value(key any) any {
	switch key {
	case requestIDKey:
		return string(c.id[:c.n])
	case requestCtxKey:
		return c
	}
	return c.Context.Value(key)
}

// requestCtxOf is the request's requestCtx, also under contexts a handler derived from it; nil outside
// requestContext.
func requestCtxOf(c *fiber.Ctx) *requestCtx {
	ctx := c.UserContext()
	if rc, ok := ctx.(*requestCtx); ok {
		return rc
	}
	rc, _ := ctx.Value(requestCtxKey).(*requestCtx)
	return rc
}

// RequestID returns the request id of a request's context.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}
