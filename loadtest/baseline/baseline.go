// Package baseline serves the classic design the platform is measured against — booking/rowlock: one Postgres
// transaction per hold with SELECT ... FOR UPDATE on the seat rows, no Redis — on a loopback port of the load test
// itself, so a hold-storm can hit it in the same run, on the same machine and the same Postgres, with the same
// request and answers as the platform's hold.
//
// The baseline is booking's code; this package only gives it an HTTP listener, a user check and shows copied from
// the platform's seat maps. It is reached directly, not through the edge: that favours the baseline by one proxy
// hop, which the report says.
package baseline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/rowlock"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
)

// Server is the baseline listening on a loopback port.
type Server struct {
	pool  *pgxpool.Pool
	store *rowlock.Store
	app   *fiber.App
	url   string
	ln    net.Listener
	done  chan error
}

// Config configures the baseline server.
type Config struct {
	DatabaseURL string
	// AuthSecret verifies user tokens as booking does (HS256). Empty: the token's subject is trusted unverified,
	// which costs the baseline a few microseconds less per request than the platform pays.
	AuthSecret string
	HoldTTL    time.Duration
	MaxConns   int32 // Postgres pool size; default 16
}

const userKey = "loadtest.baseline.user"

// Start opens the pool, creates the baseline's tables if missing and listens on 127.0.0.1:0 until Close.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	if pc.MaxConns <= 0 {
		pc.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if err := rowlock.Setup(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("baseline: setup: %w", err)
	}
	verify := unverifiedSubject
	if cfg.AuthSecret != "" {
		v := token.NewUserVerifier([]byte(cfg.AuthSecret), nil, 5*time.Second)
		verify = v.Verify
	}
	s := &Server{pool: pool, store: rowlock.New(pool, cfg.HoldTTL), done: make(chan error, 1)}
	s.app = fiber.New(fiber.Config{DisableStartupMessage: true})
	auth := func(c *fiber.Ctx) error {
		id, err := "", errors.New("no bearer token")
		if raw := session.Bearer(c); raw != "" {
			id, err = verify(raw)
		}
		if err != nil || id == "" {
			return problem.Send(c, problem.New(fiber.StatusUnauthorized, problem.Unauthorized, "a user token is required"))
		}
		c.Locals(userKey, strings.Clone(id))
		return c.Next()
	}
	s.store.Mount(s.app, auth, func(c *fiber.Ctx) string { id, _ := c.Locals(userKey).(string); return id })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("baseline: %w", err)
	}
	s.url, s.ln = "http://"+ln.Addr().String(), ln
	go func() { s.done <- s.app.Listener(ln) }()
	return s, nil
}

// unverifiedSubject reads a token's sub without checking its signature.
func unverifiedSubject(raw string) (string, error) {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &c); err != nil {
		return "", err
	}
	return c.Subject, nil
}

// URL is the baseline's base URL.
func (s *Server) URL() string { return s.url }

// NewShow copies a platform show's seats (ids, categories, prices) into a fresh baseline show and returns its id.
func (s *Server) NewShow(ctx context.Context, seats []client.Seat) (string, error) {
	bs := make([]booking.Seat, len(seats))
	for i, st := range seats {
		bs[i] = booking.Seat{ID: st.SeatID, Row: st.Row, Number: st.Number, Category: st.Category, Price: st.Price}
	}
	id := booking.NewID("rlshow_")
	return id, s.store.CreateShow(ctx, id, bs)
}

// Close stops the listener and closes the pool.
func (s *Server) Close() error {
	err := s.app.ShutdownWithTimeout(5 * time.Second)
	s.ln.Close() // fasthttp closes only a listener its Serve has registered: a Close right after New would wait for ever
	<-s.done
	s.pool.Close()
	return err
}
