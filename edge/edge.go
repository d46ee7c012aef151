// Package edge is flashseat's public front door as domain behaviour: which requests the admission gate protects and
// where their show id comes from, how requests are classed for rate limiting, which headers never cross a proxy,
// and whom to believe about a client's address. It knows nothing of fiber or Redis; edge/http serves these policies
// and edge/app wires them to configuration.
package edge

import (
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/store"
)

// Errors the edge itself can answer with. edge/http maps each to one status and problem type in a single table.
var (
	// ErrUpstreamUnavailable: booking could not be reached or broke the connection (502). Never retried for a
	// non-idempotent request, since the upstream may have acted on it.
	ErrUpstreamUnavailable = errors.New("edge: upstream unavailable")
	// ErrUpstreamTimeout: booking did not answer in time (504).
	ErrUpstreamTimeout = errors.New("edge: upstream timed out")
	// ErrBadRequest: a request the edge cannot even forward (malformed URI or header).
	ErrBadRequest = errors.New("edge: bad request")
	// ErrEncodedBody: a gated request whose body the gate must read arrived compressed. Decompressing an
	// untrusted body before any check invites a zip bomb, and no client needs to compress a hold.
	ErrEncodedBody = errors.New("edge: compressed request body")
	// ErrUnauthenticated: a protected write without a valid user token, while the show's queue is on.
	ErrUnauthenticated = errors.New("edge: user token required")
	// ErrRateLimited: the client or user exceeded its rate for the route class.
	ErrRateLimited = errors.New("edge: rate limited")
	// ErrUnavailable: a store the edge needs for a decision (Redis) is unreachable. It wraps store.ErrUnavailable,
	// the outage every service answers alike (503 store-unavailable with Retry-After).
	ErrUnavailable = fmt.Errorf("edge: %w", store.ErrUnavailable)
)

// RateLimitError is an ErrRateLimited with the time after which a retry can succeed.
type RateLimitError struct {
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("edge: rate limited, retry after %s", e.RetryAfter)
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// AdmissionError is a refusal by the admission gate for a show; Err says why (it wraps admission.ErrRequired and
// the token error). The show decides the waiting room the client is sent to.
type AdmissionError struct {
	ShowID string
	Err    error
}

func (e *AdmissionError) Error() string { return "edge: show " + e.ShowID + ": " + e.Err.Error() }

// Unwrap exposes the reason to errors.Is.
func (e *AdmissionError) Unwrap() error { return e.Err }

// QueueURL is the waiting room of a show, where refused clients are sent.
func QueueURL(showID string) string { return "/queue/" + showID }
