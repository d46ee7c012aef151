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

// BreakerState is the breaker's position. Its number is the value of the booking_payment_breaker_state metric.
type BreakerState int

// Closed lets every call through; Open refuses all; HalfOpen lets a few probes through after the cool-down.
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

// BreakerConfig tunes a Breaker. Zero fields take the defaults.
type BreakerConfig struct {
	Window       time.Duration // the rolling window calls are counted over; default 30s
	MinCalls     int           // fewer calls than this in the window never trip it; default 20
	FailureRatio float64       // it trips when failures/calls in the window reach this; default 0.5
	Cooldown     time.Duration // how long it stays open before probing; default 10s
	Probes       int           // half-open: calls let through, all of which must succeed to close; default 3
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Window <= 0 {
		c.Window = 30 * time.Second
	}
	if c.MinCalls < 1 {
		c.MinCalls = 20
	}
	if c.FailureRatio <= 0 || c.FailureRatio > 1 {
		c.FailureRatio = 0.5
	}
	if c.Cooldown < time.Millisecond {
		c.Cooldown = 10 * time.Second
	}
	if c.Probes < 1 {
		c.Probes = 3
	}
	return c
}

// windowBuckets is how finely the rolling window is cut: a call leaves the count within Window/windowBuckets of
// its age reaching Window.
const windowBuckets = 10

type bucket struct {
	slot            int64 // which Window/windowBuckets interval since the epoch this bucket counts
	calls, failures int
}

// Breaker is a Gateway that stops calling an unhealthy gateway. It measures the gateway, not the fans: over a
// rolling Window it counts the calls that reached the gateway and those that found it unavailable (Failure:
// timeouts, refused connections, 5xx); once at least MinCalls were made and the failures reach FailureRatio of
// them, it opens for Cooldown, during which every call fails at once with an *OpenError, so that pay answers 503
// in microseconds instead of tying up a request (and a seat lock extension) per fan for the gateway's timeout.
// After the cool-down it lets Probes calls through; if all succeed it closes with a fresh window, and the first
// that fails opens it again for a full cool-down.
//
// A decline, an invalid card or request, and the caller's own cancellation are not failures: they say the
// gateway answered, or nothing about it. A decline counts as a call the gateway served, so a crowd of declined
// cards dilutes, never feeds, the failure ratio.
type Breaker struct {
	next     Gateway
	cfg      BreakerConfig
	now      func() time.Time
	onChange func(BreakerState)

	mu         sync.Mutex
	state      BreakerState
	window     [windowBuckets]bucket
	openedAt   time.Time
	probesOut  int            // half-open: probes let through and not yet answered
	probesOK   int            // half-open: probes answered without a failure
	generation int            // bumped on every state change, so a late probe's verdict cannot act on a later state
	pending    []BreakerState // changes made under the lock, told to onChange once it is released
}

// BreakerOption adjusts a Breaker.
type BreakerOption func(*Breaker)

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) BreakerOption { return func(b *Breaker) { b.now = now } }

// OnStateChange is called (under no lock) whenever the state changes, e.g. to export a metric or log.
func OnStateChange(f func(BreakerState)) BreakerOption { return func(b *Breaker) { b.onChange = f } }

// NewBreaker wraps next.
func NewBreaker(next Gateway, cfg BreakerConfig, opts ...BreakerOption) *Breaker {
	b := &Breaker{next: next, cfg: cfg.withDefaults(), now: time.Now}
	for _, o := range opts {
		o(b)
	}
	return b
}

// State returns the current state; an open breaker whose cool-down has passed reports HalfOpen.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && b.now().Sub(b.openedAt) >= b.cfg.Cooldown {
		return HalfOpen
	}
	return b.state
}

// ticket is what allow hands a call it lets through: whether it is a half-open probe, and of which generation.
type ticket struct {
	probe      bool
	generation int
}

// allow decides whether a call may go through.
func (b *Breaker) allow() (ticket, error) {
	b.mu.Lock()
	if b.state == Open {
		wait := b.cfg.Cooldown - b.now().Sub(b.openedAt)
		if wait > 0 {
			b.mu.Unlock()
			return ticket{}, &OpenError{RetryAfter: wait}
		}
		b.setState(HalfOpen)
		b.probesOut, b.probesOK = 0, 0
	}
	switch b.state {
	case HalfOpen:
		if b.probesOut+b.probesOK >= b.cfg.Probes {
			// Enough probes are out; everyone else waits for their verdict.
			b.mu.Unlock()
			return ticket{}, &OpenError{RetryAfter: time.Second}
		}
		b.probesOut++
		t := ticket{probe: true, generation: b.generation}
		b.unlockAndNotify()
		return t, nil
	default:
		t := ticket{generation: b.generation}
		b.unlockAndNotify()
		return t, nil
	}
}

// record feeds a call's outcome back.
func (b *Breaker) record(t ticket, err error) {
	cancelled := errors.Is(err, context.Canceled)
	failed := Failure(err) && !cancelled
	b.mu.Lock()
	if t.generation != b.generation {
		// The breaker changed state while this call was out: its verdict belongs to the old state.
		b.mu.Unlock()
		return
	}
	now := b.now()
	switch {
	case t.probe:
		b.probesOut--
		switch {
		case failed:
			b.open(now)
		case cancelled:
			// No verdict: the slot is free for another probe.
		default:
			b.probesOK++
			if b.probesOK >= b.cfg.Probes {
				b.window = [windowBuckets]bucket{}
				b.setState(Closed)
			}
		}
	case cancelled:
	default:
		calls, failures := b.count(now, failed)
		if b.state == Closed && calls >= b.cfg.MinCalls && float64(failures) >= b.cfg.FailureRatio*float64(calls) {
			b.open(now)
		}
	}
	b.unlockAndNotify()
}

// count adds a call to the rolling window and returns the window's calls and failures.
func (b *Breaker) count(now time.Time, failed bool) (calls, failures int) {
	width := int64(b.cfg.Window) / windowBuckets
	slot := now.UnixNano() / max(width, 1)
	cur := &b.window[slot%windowBuckets]
	if cur.slot != slot {
		*cur = bucket{slot: slot}
	}
	cur.calls++
	if failed {
		cur.failures++
	}
	for _, bk := range b.window {
		if bk.slot > slot-windowBuckets && bk.slot <= slot {
			calls += bk.calls
			failures += bk.failures
		}
	}
	return calls, failures
}

func (b *Breaker) open(now time.Time) {
	b.openedAt = now
	b.probesOut, b.probesOK = 0, 0
	b.setState(Open)
}

// setState changes the state under the lock; unlockAndNotify tells OnStateChange after releasing it.
func (b *Breaker) setState(s BreakerState) {
	if b.state == s {
		return
	}
	b.state = s
	b.generation++
	b.pending = append(b.pending, s)
}

func (b *Breaker) unlockAndNotify() {
	changes := b.pending
	b.pending = nil
	b.mu.Unlock()
	if b.onChange != nil {
		for _, s := range changes {
			b.onChange(s)
		}
	}
}

func guard[T any](b *Breaker, call func() (T, error)) (T, error) {
	t, err := b.allow()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := call()
	b.record(t, err)
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
