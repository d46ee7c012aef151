package http

import (
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/problem"
)

// code maps a domain error to an HTTP status and problem type.
type code struct {
	err    error
	status int
	slug   string
}

// codes is the one table from domain errors to problems; the first entry whose error matches (errors.Is) wins.
// Payments add their entries from their own file with an init that appends here.
var codes = []code{
	{booking.ErrQueueRequired, fiber.StatusForbidden, problem.QueueRequired},
	{booking.ErrSeatsUnavailable, fiber.StatusConflict, problem.SeatsUnavailable},
	{booking.ErrStale, fiber.StatusConflict, problem.SeatsUnavailable},
	{booking.ErrInvalid, fiber.StatusBadRequest, problem.BadRequest},
	{booking.ErrValidation, fiber.StatusUnprocessableEntity, problem.Validation},
	{booking.ErrTooManySeats, fiber.StatusUnprocessableEntity, problem.Validation},
	{booking.ErrSaleNotOpen, fiber.StatusUnprocessableEntity, "sale-not-open"},
	{booking.ErrIdempotency, fiber.StatusUnprocessableEntity, "idempotency-key-reused"},
	{booking.ErrNotFound, fiber.StatusNotFound, problem.NotFound},
	{booking.ErrNotHeld, fiber.StatusConflict, problem.Conflict},
	{booking.ErrInProgress, fiber.StatusConflict, "in-progress"},
	{booking.ErrHoldExpired, fiber.StatusGone, problem.Gone},
	{booking.ErrUnauthorized, fiber.StatusUnauthorized, problem.Unauthorized},
	{booking.ErrForbidden, fiber.StatusForbidden, problem.Forbidden},
}

// toProblem turns any error into the problem the client sees. Unknown errors are internal: the client gets a
// generic message, the log gets the error once, with the request id.
func (s *Server) toProblem(c *fiber.Ctx, err error) *problem.Problem {
	var p *problem.Problem
	if errors.As(err, &p) {
		return p
	}
	if p, ok := problem.FromFiber(err); ok {
		if p.Status >= 500 && p.Status != fiber.StatusServiceUnavailable {
			s.log.ErrorContext(c.UserContext(), "internal error", "err", err)
			p.Detail = "internal error"
		}
		return p
	}
	for _, m := range codes {
		if !errors.Is(err, m.err) {
			continue
		}
		p := problem.New(m.status, m.slug, err.Error())
		var ce *booking.ConflictError
		if errors.As(err, &ce) {
			p.Detail = "some of the seats are held or sold"
			p.With("unavailable", nonNil(ce.Unavailable)).With("alternatives", nonNil(ce.Alternatives))
		}
		var qe *booking.QueueError
		if errors.As(err, &qe) {
			p.Detail = "this show has a waiting room: join it to get an admission token"
			p.With("queueUrl", qe.QueueURL())
		}
		return p
	}
	s.log.ErrorContext(c.UserContext(), "internal error", "method", c.Method(), "path", string([]byte(c.Path())), "err", err)
	return problem.New(fiber.StatusInternalServerError, problem.Internal, "internal error")
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	p := s.toProblem(c, err)
	if p.Status == fiber.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="flashseat"`)
	}
	if p.Status >= 500 && s.log.Enabled(c.UserContext(), slog.LevelDebug) {
		s.log.DebugContext(c.UserContext(), "problem", "status", p.Status)
	}
	return problem.Send(c, p)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
