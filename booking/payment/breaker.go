package payment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrCircuitOpen is returned, wrapped in an *OpenError, while the breaker refuses calls. It also matches
// ErrUnavailable, so code that only knows "the gateway is down" treats both alike.
var ErrCircuitOpen = errors.New("payment: circuit open")

// OpenError is the fail-fast answer of an open breaker; RetryAfter is when the next probe will be let through,
// which the HTTP layer sends as Retry-After.
type OpenError struct {
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("payment: circuit open, retry after %s", e.RetryAfter.Round(time.Second))
}

// Is makes an OpenError match ErrCircuitOpen and ErrUnavailable.
func (e *OpenError) Is(target error) bool {
	return target == ErrCircuitOpen || target == ErrUnavailable
}

// BreakerState is the breaker's position.
type BreakerState int

// Closed lets every call through; Open refuses all; HalfOpen lets a single probe through after the cool-down.
const (
	Closed BreakerState = iota
	Open
	HalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	default:
		return "half-open"
	}
}

// Breaker is a Gateway that stops calling an unhealthy gateway: after Threshold consecutive failures (see Failure)
// it opens for Cooldown, during which every call fails at once with an *OpenError, so that pay answers 503 in
// microseconds instead of tying up a request (and a seat lock extension) per fan for the gateway's timeout. After
// the cool-down one probe call is let through; its success closes the breaker, its failure opens it again.
//
// Declines, invalid requests and the caller's own cancellation are not failures: they say nothing about the
// gateway's health.
type Breaker struct {
	next      Gateway
	threshold int
	cooldown  time.Duration
	now       func() time.Time
	onChange  func(BreakerState)

	mu       sync.Mutex
	state    BreakerState
	failures int
	openedAt time.Time
}

// BreakerOption adjusts a Breaker.
type BreakerOption func(*Breaker)

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) BreakerOption { return func(b *Breaker) { b.now = now } }

// OnStateChange is called (under no lock) whenever the state changes, e.g. to export a metric or log.
func OnStateChange(f func(BreakerState)) BreakerOption { return func(b *Breaker) { b.onChange = f } }

// NewBreaker wraps next. threshold below 1 is taken as 1; cooldown below one millisecond as one second.
func NewBreaker(next Gateway, threshold int, cooldown time.Duration, opts ...BreakerOption) *Breaker {
	if threshold < 1 {
		threshold = 1
	}
	if cooldown < time.Millisecond {
		cooldown = time.Second
	}
	b := &Breaker{next: next, threshold: threshold, cooldown: cooldown, now: time.Now}
	for _, o := range opts {
		o(b)
	}
	return b
}

// State returns the current state; an open breaker whose cool-down has passed reports HalfOpen.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && b.now().Sub(b.openedAt) >= b.cooldown {
		return HalfOpen
	}
	return b.state
}

// allow decides whether a call may go through; probe reports that this call is the half-open probe.
func (b *Breaker) allow() (probe bool, err error) {
	b.mu.Lock()
	switch b.state {
	case Closed:
		b.mu.Unlock()
		return false, nil
	case Open:
		wait := b.cooldown - b.now().Sub(b.openedAt)
		if wait > 0 {
			b.mu.Unlock()
			return false, &OpenError{RetryAfter: wait}
		}
		b.state = HalfOpen
		b.mu.Unlock()
		if b.onChange != nil {
			b.onChange(HalfOpen)
		}
		return true, nil
	default: // HalfOpen: the probe is out; everyone else waits for its verdict
		b.mu.Unlock()
		return false, &OpenError{RetryAfter: time.Second}
	}
}

// record feeds a call's outcome back.
func (b *Breaker) record(probe bool, err error) {
	failed := Failure(err) && !errors.Is(err, context.Canceled)
	b.mu.Lock()
	before := b.state
	switch {
	case !failed:
		b.failures = 0
		b.state = Closed
	case probe:
		b.state, b.openedAt = Open, b.now()
	default:
		b.failures++
		if b.failures >= b.threshold && b.state == Closed {
			b.state, b.openedAt = Open, b.now()
		}
	}
	after := b.state
	b.mu.Unlock()
	if after != before && b.onChange != nil {
		b.onChange(after)
	}
}

func guard[T any](b *Breaker, call func() (T, error)) (T, error) {
	probe, err := b.allow()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := call()
	b.record(probe, err)
	return v, err
}

// Authorize implements Gateway.
func (b *Breaker) Authorize(ctx context.Context, p AuthorizeParams) (Intent, error) {
	return guard(b, func() (Intent, error) { return b.next.Authorize(ctx, p) })
}

// Capture implements Gateway.
func (b *Breaker) Capture(ctx context.Context, intentID, key string) (Intent, error) {
	return guard(b, func() (Intent, error) { return b.next.Capture(ctx, intentID, key) })
}

// Void implements Gateway.
func (b *Breaker) Void(ctx context.Context, intentID, key string) (Intent, error) {
	return guard(b, func() (Intent, error) { return b.next.Void(ctx, intentID, key) })
}

// Refund implements Gateway.
func (b *Breaker) Refund(ctx context.Context, p RefundParams) (Refund, error) {
	return guard(b, func() (Refund, error) { return b.next.Refund(ctx, p) })
}

// Retrieve implements Gateway.
func (b *Breaker) Retrieve(ctx context.Context, intentID string) (Intent, error) {
	return guard(b, func() (Intent, error) { return b.next.Retrieve(ctx, intentID) })
}
