package http

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/store"
)

// storeRetryAfter is the Retry-After, in seconds, of a store-unavailable answer: a Redis or PostgreSQL restart
// takes seconds, and clients back off further on their own.
const storeRetryAfter = 1

// streamRetryAfter is the Retry-After, in seconds, of a stream refused at its cap: a closed tab frees its stream
// at once, and EventSource retries on its own.
const streamRetryAfter = 5

// Errors of the HTTP layer itself, not of the domain: they go through the table like any other, so that no
// handler picks a status.
var (
	errShuttingDown = errors.New("shutting down")        // readiness while the server drains
	errBusy         = errors.New("too busy, try again")  // a hot route's line did not move in time (limiter)
	errGuestsOff    = errors.New("guest sign-up is off") // POST /v1/auth/guest without a guest issuer
)

// notReadyError is /readyz's answer while a store does not answer its ping: store-unavailable, with each store's
// state.
type notReadyError struct {
	checks map[string]string
	err    error
}

func (e *notReadyError) Error() string { return "not ready: " + e.err.Error() }

// Unwrap makes errors.Is(err, store.ErrUnavailable) hold, whatever the ping returned.
func (e *notReadyError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// codes is the one table from errors to problems, for every kind of error booking's domain returns
// (booking/errors.go; TestCodesCoverDomain keeps it complete) and the HTTP layer's own. The first entry whose
// error matches (errors.Is) wins.
var codes = problem.Table{
	// First: a store error can ride inside any other (a hold that could not be read back), and the client must
	// learn it can retry, not that its request was wrong.
	problem.Map(store.ErrUnavailable, fiber.StatusServiceUnavailable, problem.StoreUnavailable, ""),
	problem.Map(booking.ErrQueueRequired, fiber.StatusForbidden, problem.QueueRequired, ""),
	problem.Map(booking.ErrSeatsUnavailable, fiber.StatusConflict, problem.SeatsUnavailable, ""),
	problem.Map(booking.ErrStale, fiber.StatusConflict, problem.SeatsUnavailable, ""),
	problem.Map(booking.ErrInvalid, fiber.StatusBadRequest, problem.BadRequest, ""),
	problem.Map(booking.ErrValidation, fiber.StatusUnprocessableEntity, problem.Validation, ""),
	problem.Map(booking.ErrTooManySeats, fiber.StatusUnprocessableEntity, problem.Validation, ""),
	problem.Map(booking.ErrSaleNotOpen, fiber.StatusUnprocessableEntity, problem.SaleNotOpen, ""),
	problem.Map(booking.ErrSaleClosed, fiber.StatusConflict, problem.SaleClosed, ""),
	problem.Map(booking.ErrIdempotency, fiber.StatusUnprocessableEntity, problem.IdempotencyKeyReused, ""),
	problem.Map(booking.ErrNotFound, fiber.StatusNotFound, problem.NotFound, ""),
	problem.Map(booking.ErrNotHeld, fiber.StatusConflict, problem.Conflict, ""),
	problem.Map(booking.ErrInProgress, fiber.StatusConflict, problem.InProgress, ""),
	problem.Map(booking.ErrHoldExpired, fiber.StatusGone, problem.Gone, ""),
	problem.Map(booking.ErrUnauthorized, fiber.StatusUnauthorized, problem.Unauthorized, ""),
	problem.Map(booking.ErrForbidden, fiber.StatusForbidden, problem.Forbidden, ""),
	problem.Map(session.ErrCSRF, fiber.StatusForbidden, problem.CSRF, ""),
	problem.Map(booking.ErrNotSoldOut, fiber.StatusConflict, problem.NotSoldOut, ""),
	problem.Map(booking.ErrTooManyStreams, fiber.StatusTooManyRequests, problem.RateLimited, ""),

	// Payments, refunds, tickets and check-in.
	problem.Map(booking.ErrPaymentDeclined, fiber.StatusPaymentRequired, problem.PaymentDeclined, ""),
	problem.Map(booking.ErrPaymentFailed, fiber.StatusServiceUnavailable, problem.ServiceUnavailable, ""),
	problem.Map(booking.ErrNotConfirmed, fiber.StatusConflict, problem.Conflict, ""),
	problem.Map(booking.ErrRefundWindow, fiber.StatusConflict, problem.RefundWindowClosed, ""),
	problem.Map(booking.ErrTicketInvalid, fiber.StatusBadRequest, problem.TicketInvalid, ""),
	problem.Map(booking.ErrAlreadyCheckedIn, fiber.StatusConflict, problem.AlreadyCheckedIn, ""),
	problem.Map(booking.ErrTicketVoid, fiber.StatusConflict, problem.TicketVoid, ""),
	problem.Map(booking.ErrSeatNotPaid, fiber.StatusConflict, problem.SeatNotPaid, ""),
	problem.Map(booking.ErrTransferred, fiber.StatusConflict, problem.TicketTransferred, ""),
	problem.Map(booking.ErrTransferClosed, fiber.StatusConflict, problem.TransferClosed, ""),
	problem.Map(booking.ErrResaleClosed, fiber.StatusConflict, problem.ResaleClosed, ""),
	problem.Map(booking.ErrPriceAboveCap, fiber.StatusUnprocessableEntity, problem.PriceAboveCap, ""),
	problem.Map(booking.ErrTicketListed, fiber.StatusConflict, problem.TicketListed, ""),
	problem.Map(booking.ErrResold, fiber.StatusConflict, problem.TicketResold, ""),
	problem.Map(booking.ErrCodeExpired, fiber.StatusConflict, problem.CodeExpired, ""),
	problem.Map(booking.ErrRotatingCodes, fiber.StatusConflict, problem.RotatingCodes, ""),
	problem.Map(booking.ErrStaticCodes, fiber.StatusConflict, problem.StaticCodes, ""),
	problem.Map(booking.ErrWebhook, fiber.StatusBadRequest, problem.BadRequest, ""),

	problem.Map(errShuttingDown, fiber.StatusServiceUnavailable, problem.ServiceUnavailable, ""),
	problem.Map(errBusy, fiber.StatusServiceUnavailable, problem.ServiceUnavailable, ""),
	problem.Map(errGuestsOff, fiber.StatusNotFound, problem.NotFound, ""),
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
	if !errors.Is(err, booking.ErrPaymentFailed) {
		// A failed payment is the gateway's outage, answered with the breaker's own Retry-After; whatever network
		// error it carries is not a store's.
		err = driver.Classify(err)
	}
	var nr *notReadyError
	if errors.As(err, &nr) {
		// Logged by readyz already; the probe's answer names each store's state.
		return problem.StoreDown("a store is unreachable", storeRetryAfter).With("checks", nr.checks)
	}
	if m, ok := codes.Match(err); ok {
		if m.Slug == problem.StoreUnavailable {
			s.log.WarnContext(c.UserContext(), "store unavailable", "method", c.Method(), "path", string([]byte(c.Path())), "err", err)
			return problem.StoreDown("a store is briefly unreachable; retry shortly", storeRetryAfter)
		}
		p := problem.New(m.Status, m.Slug, err.Error())
		if m.Slug == problem.RateLimited {
			p.WithRetryAfter(streamRetryAfter)
		}
		var ce *booking.ConflictError
		if errors.As(err, &ce) {
			p.Detail = "some of the seats are held or sold"
			p.With("unavailable", nonNil(ce.Unavailable)).With("alternatives", nonNil(ce.Alternatives))
		}
		var qe *booking.QueueError
		if errors.As(err, &qe) {
			p.Detail = "this show has a waiting room: join it to get an admission token"
			reason := admission.Reason(qe.Cause)
			p.With("queueUrl", qe.QueueURL()).With("reason", reason)
			// Behind the edge, which checks the same token first, a refusal here means the two disagreed (a
			// revocation between the checks, or the edge's gate off): worth a line, and rare.
			s.log.InfoContext(c.UserContext(), "admission refused", "show", qe.ShowID, "reason", reason,
				"method", c.Method(), "path", string([]byte(c.Path())))
		}
		return p
	}
	s.log.ErrorContext(c.UserContext(), "internal error", "method", c.Method(), "path", string([]byte(c.Path())), "err", err)
	return problem.New(fiber.StatusInternalServerError, problem.Internal, "internal error")
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	if ce := conflictOf(err); ce != nil {
		// The answer to nearly every request of a flash crowd: written without reflection.
		c.Status(fiber.StatusConflict)
		h := &c.Response().Header
		h.SetContentType(problem.ContentType)
		h.SetCanonical(headerCacheControl, noStore) // Set would normalise the name on every refusal
		buf := conflictBufs.Get().(*[]byte)
		*buf = appendConflict((*buf)[:0], ce)
		c.Response().SetBody(*buf) // copies into the response's own buffer (fiber's Send would keep *buf)
		conflictBufs.Put(buf)
		return nil
	}
	p := s.toProblem(c, err)
	if wantsPage(c) {
		// A browser navigating to a page gets a page, not JSON.
		detail := p.Detail
		if p.Status == fiber.StatusNotFound {
			detail = "We could not find that page. The show may have ended or the link may be mistyped."
		}
		switch {
		case p.Type == problem.TypeBase+problem.StoreUnavailable:
			detail = "We cannot reach our systems for a moment. Please try again in a few seconds."
		case p.Status >= 500 || detail == "":
			detail = "Something went wrong on our side. Please try again in a moment."
		}
		problem.SetRetryAfter(c, p)
		if rerr := s.render(c, p.Status, "error", Page{Title: p.Title,
			Data: struct{ Title, Detail string }{p.Title, detail}}); rerr == nil {
			return nil
		}
	}
	if p.Status == fiber.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="flashseat"`)
	}
	if p.Status >= 500 && s.log.Enabled(c.UserContext(), slog.LevelDebug) {
		s.log.DebugContext(c.UserContext(), "problem", "status", p.Status)
	}
	return problem.Send(c, p)
}

// conflictOf returns the seats-unavailable error in err, or nil. A refused hold returns it unwrapped, and the
// type assertion costs nothing where errors.As's target escapes to the heap on every refusal.
func conflictOf(err error) *booking.ConflictError {
	if ce, ok := err.(*booking.ConflictError); ok {
		return ce
	}
	var ce *booking.ConflictError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

var (
	headerCacheControl = []byte(fiber.HeaderCacheControl)
	noStore            = []byte("no-store")
)

var conflictBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendConflict renders a seats-unavailable problem exactly as toProblem and problem.Send would.
func appendConflict(b []byte, ce *booking.ConflictError) []byte {
	b = append(b, `{"type":"`+problem.TypeBase+problem.SeatsUnavailable+`","title":"Conflict","status":409,`+
		`"detail":"some of the seats are held or sold","unavailable":`...)
	b = appendStrings(b, ce.Unavailable)
	b = append(b, `,"alternatives":`...)
	b = appendStrings(b, ce.Alternatives)
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
