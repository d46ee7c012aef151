package http

import (
	"errors"
	"math"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/shared/token"
)

// codes is the edge's one table from domain errors to HTTP status and problem type. The first match wins, so
// specific errors come before the ones they wrap.
var codes = problem.Table{
	problem.Map(edge.ErrBadRequest, http.StatusBadRequest, problem.BadRequest, "The request cannot be forwarded."),
	problem.Map(edge.ErrEncodedBody, http.StatusUnsupportedMediaType, problem.UnsupportedMedia, "Send the body uncompressed."),
	problem.Map(session.ErrCSRF, http.StatusForbidden, problem.CSRF, session.CSRFDetail),
	problem.Map(edge.ErrUnauthenticated, http.StatusUnauthorized, problem.Unauthorized, "A valid user token is required."),
	problem.Map(token.ErrInvalid, http.StatusUnauthorized, problem.Unauthorized, "The user token is not valid."),
	problem.Map(token.ErrExpired, http.StatusUnauthorized, problem.Unauthorized, "The user token has expired."),
	problem.Map(edge.ErrRateLimited, http.StatusTooManyRequests, problem.RateLimited, "Too many requests; retry later."),
	problem.Map(edge.ErrUpstreamTimeout, http.StatusGatewayTimeout, problem.GatewayTimeout, "The booking service did not answer in time."),
	problem.Map(edge.ErrUpstreamUnavailable, http.StatusBadGateway, problem.BadGateway, "The booking service is unavailable."),
	problem.Map(store.ErrUnavailable, http.StatusServiceUnavailable, problem.StoreUnavailable, "A store is briefly unreachable; retry shortly."),
}

// storeRetryAfter is the Retry-After, in seconds, of a store-unavailable answer.
const storeRetryAfter = 1

// handleError is fiber's ErrorHandler and the only place the edge turns an error into a response.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	// Anything a handler had started (headers copied from the upstream) is not part of the error answer.
	c.Response().Reset()
	c.Set(HeaderRequestID, RequestID(c))

	var ae *edge.AdmissionError
	if errors.As(err, &ae) {
		return s.refuseAdmission(c, ae)
	}
	var p *problem.Problem
	if errors.As(err, &p) {
		return problem.Send(c, p)
	}
	if p, ok := problem.FromFiber(err); ok {
		// fasthttp's messages quote the request back ("invalid header key ... contents: ..."); the client
		// gets the status's own words and the log keeps the detail.
		s.log.Debug("request refused by the server", "err", err, "requestId", RequestID(c))
		p.Detail = http.StatusText(p.Status)
		if p.Status == http.StatusRequestHeaderFieldsTooLarge || p.Status == http.StatusRequestEntityTooLarge {
			lingerAfter(c) // the client may still be sending what the server stopped reading
		}
		if p.Status >= 500 && p.Status != http.StatusServiceUnavailable {
			s.log.Error("fiber error", "err", err, "requestId", RequestID(c))
		}
		return problem.Send(c, p)
	}
	// No driver.Classify here: a refused dial to booking is a 502, not a store outage. The edge's own Redis calls
	// wrap their failures in edge.ErrUnavailable where they are made.
	if code, ok := codes.Match(err); ok {
		p := code.Problem(err)
		var rl *edge.RateLimitError
		if errors.As(err, &rl) {
			p.WithRetryAfter(int(math.Ceil(rl.RetryAfter.Seconds())))
		}
		if code.Err == store.ErrUnavailable {
			p.WithRetryAfter(storeRetryAfter)
		}
		if code.Status >= 500 {
			s.log.Warn("upstream failure", "err", err, "status", code.Status, "method", c.Method(),
				"path", c.Path(), "requestId", RequestID(c))
		}
		return problem.Send(c, p)
	}
	s.log.Error("internal error", "err", err, "method", c.Method(), "path", c.Path(), "requestId", RequestID(c))
	return problem.Send(c, problem.New(http.StatusInternalServerError, problem.Internal, "Something went wrong."))
}

// refuseAdmission sends a fan without an acceptable admission token to the show's waiting room: browsers by a
// redirect, API clients by a 403 naming the room.
func (s *Server) refuseAdmission(c *fiber.Ctx, ae *edge.AdmissionError) error {
	reason := admission.Reason(ae.Err)
	s.metrics.gateRefusals.WithLabelValues(reason).Inc()
	c.Set(fiber.HeaderCacheControl, "no-store")
	if ae.ShowID == "" {
		// A token that names no show: there is no waiting room to send the client to.
		return problem.Send(c, problem.New(http.StatusForbidden, problem.Forbidden, "The admission token is not valid.").
			With("reason", reason))
	}
	q := edge.QueueURL(ae.ShowID)
	if wantsHTML(c) {
		c.Set(fiber.HeaderLocation, q)
		return c.SendStatus(http.StatusSeeOther)
	}
	p := problem.New(http.StatusForbidden, problem.QueueRequired,
		"This show's waiting room is open; join it to get an admission token.").
		With("queueUrl", q).With("showId", ae.ShowID).With("reason", reason)
	return problem.Send(c, p)
}

// wantsHTML tells a browser navigating (Accept lists text/html) from an API client.
func wantsHTML(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/html")
}

// knownMethods answers methods fiber cannot route with a 405 problem; fiber would send plain text.
func knownMethods(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	known := map[string]bool{}
	for _, m := range fiber.DefaultMethods {
		known[m] = true
	}
	body, _ := problem.New(http.StatusMethodNotAllowed, problem.MethodNotAllowed, "Unsupported method.").MarshalJSON()
	return func(ctx *fasthttp.RequestCtx) {
		if !known[string(ctx.Method())] {
			ctx.SetStatusCode(http.StatusMethodNotAllowed)
			ctx.SetContentType(problem.ContentType)
			ctx.Response.Header.Set(fiber.HeaderCacheControl, "no-store")
			ctx.SetBody(body)
			return
		}
		next(ctx)
	}
}
