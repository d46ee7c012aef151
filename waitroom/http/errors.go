package http

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/waitroom"
)

// The waiting room's errors as problems: its own sentinels, the table that maps them, and wrap, which every
// route's handler goes through.

var (
	errUnauthenticated = errors.New("waitroom/http: user token required")
	errAdminMissing    = errors.New("waitroom/http: admin token required")
	errAdminWrong      = errors.New("waitroom/http: not an admin token")
	errBadJSON         = errors.New("waitroom/http: malformed JSON")
	errValidation      = errors.New("waitroom/http: invalid settings")
)

// codes maps the waiting room's errors to status and problem type; first match wins. The edge process renders
// them, and everything this table does not name (the CSRF rule, user tokens, fiber's own errors, the unexpected),
// through its one error handler with its one fallback: the waiting room runs only inside the edge.
var codes = append(problem.Table{
	problem.Map(errUnauthenticated, http.StatusUnauthorized, problem.Unauthorized, "A valid user token is required."),
	problem.Map(errAdminMissing, http.StatusUnauthorized, problem.Unauthorized, "An admin token is required."),
	problem.Map(errAdminWrong, http.StatusForbidden, problem.Forbidden, "This token may not change queues."),
	problem.Map(errBadJSON, http.StatusBadRequest, problem.BadRequest, ""),
	problem.Map(errValidation, http.StatusUnprocessableEntity, problem.Validation, ""),
	problem.Map(admission.ErrUnknownAdmission, http.StatusNotFound, problem.NotFound, "No such admission."),
	problem.Map(waitroom.ErrInvalid, http.StatusBadRequest, problem.BadRequest, ""),
	problem.Map(waitroom.ErrUnknownShow, http.StatusNotFound, problem.NotFound, "No such show."),
	problem.Map(waitroom.ErrNotInQueue, http.StatusNotFound, problem.NotFound, "You are not in this queue; join it first."),
	problem.Map(store.ErrUnavailable, http.StatusServiceUnavailable, problem.StoreUnavailable, "The waiting room is briefly unavailable; your place is kept. Retry in a second."),
	problem.Map(waitroom.ErrDrawPending, http.StatusServiceUnavailable, problem.ServiceUnavailable, "The queue is opening; retry in a second."),
	problem.Map(waitroom.ErrTooManyStreams, http.StatusTooManyRequests, problem.RateLimited, "Too many open streams for this queue; close some tabs."),
	problem.Map(waitroom.ErrBypassUnknown, http.StatusUnprocessableEntity, problem.BypassCodeInvalid, "This bypass code is not valid for this show; check it, or join the line."),
	problem.Map(waitroom.ErrBypassExpired, http.StatusUnprocessableEntity, problem.BypassCodeExpired, "This bypass code has expired; you may join the line."),
	problem.Map(waitroom.ErrBypassUsedUp, http.StatusConflict, problem.BypassCodeUsedUp, "This bypass code has been used as many times as it allows; you may join the line."),
	problem.Map(waitroom.ErrBypassRevoked, http.StatusConflict, problem.BypassCodeRevoked, "This bypass code was withdrawn; you may join the line."),
	problem.Map(waitroom.ErrBypassNotNow, http.StatusConflict, problem.BypassNotNow, "The queue is not admitting anyone right now (before the sale opens, or paused); your code is kept: use it again then."),
	problem.Map(waitroom.ErrNotRegistered, http.StatusNotFound, problem.NotFound, "You have not registered for this show."),
	problem.Map(waitroom.ErrContactRequired, http.StatusForbidden, problem.ContactRequired, "Give a contact e-mail (PUT /api/v1/me/contact) and confirm it with the code mailed to it, or sign in with an account, then register."),
	problem.Map(waitroom.ErrUnknownLane, http.StatusUnprocessableEntity, problem.Validation, ""),
	problem.Map(waitroom.ErrNoRegistrations, http.StatusConflict, problem.Conflict, "Nobody has registered for this show yet: there is no one to invite."),
	problem.Map(waitroom.ErrUnknownWave, http.StatusNotFound, problem.NotFound, "No such wave has been drawn."),
}, refusalRows()...)

// refusalRows are the rows of the guard's refusals, one per error of waitroom's table of reasons.
func refusalRows() problem.Table {
	var out problem.Table
	for _, r := range waitroom.Reasons {
		if _, dup := out.Match(r.Err); !dup {
			out = append(out, problem.Map(r.Err, r.Status, r.Problem, r.Detail))
		}
	}
	return out
}

// wrap turns a handler's error that codes names into the problem the edge's error handler sends as is; any other
// error goes to that handler unchanged. A store's failure is classified here, at the waiting room's boundary: the
// edge's handler does not classify (a refused dial to booking is its 502, not a store outage).
func (h *Handler) wrap(fn fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := fn(c)
		if err == nil {
			return nil
		}
		var p *problem.Problem
		if errors.As(err, &p) {
			return p
		}
		if _, ok := problem.FromFiber(err); ok {
			return err
		}
		err = driver.Classify(err)
		if code, ok := codes.Match(err); ok {
			if code.Err == store.ErrUnavailable {
				h.log.Warn("waitroom: store unavailable", "err", err, "method", c.Method(), "path", c.Path(),
					"requestId", string(c.Response().Header.Peek("X-Request-Id")))
			}
			p := code.Problem(err)
			var ref *waitroom.Refusal
			refused := errors.As(err, &ref)
			var row waitroom.Reason // a refusal's row: its Retry-After
			if refused {
				row, _ = waitroom.ReasonOf(ref.Reason)
			}
			switch {
			case row.RetryAfter > 0:
				p.WithRetryAfter(row.RetryAfter)
			case code.Status == http.StatusServiceUnavailable || code.Status == http.StatusTooManyRequests:
				// On the problem, not the response: the edge's error handler starts its answer afresh.
				p.WithRetryAfter(1)
			}
			if refused {
				p.With("reason", ref.Reason)
				if ref.Challenge != nil {
					p.With("challenge", ref.Challenge)
				}
				if ref.Human != nil {
					p.With("humanCheck", ref.Human)
				}
			}
			return p
		}
		return err
	}
}
