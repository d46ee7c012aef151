package payment_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// scripted is a Gateway double whose every call returns the error it is set to, counting the calls.
type scripted struct {
	mu    sync.Mutex
	err   error
	calls atomic.Int64
}

func (g *scripted) set(err error) { g.mu.Lock(); g.err = err; g.mu.Unlock() }

func (g *scripted) result() error {
	g.calls.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *scripted) Authorize(context.Context, payment.AuthorizeParams) (payment.Intent, error) {
	return payment.Intent{ID: "pi_1", Status: payment.StatusRequiresCapture}, g.result()
}
func (g *scripted) Capture(context.Context, string, string) (payment.Intent, error) {
	return payment.Intent{}, g.result()
}
func (g *scripted) Void(context.Context, string, string) (payment.Intent, error) {
	return payment.Intent{}, g.result()
}
func (g *scripted) Refund(context.Context, payment.RefundParams) (payment.Refund, error) {
	return payment.Refund{}, g.result()
}
func (g *scripted) Retrieve(context.Context, string) (payment.Intent, error) {
	return payment.Intent{}, g.result()
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var (
	unavailable = &payment.Error{Kind: payment.ErrUnavailable, HTTPStatus: 500}
	timeout     = &payment.Error{Kind: payment.ErrTimeout}
	declined    = &payment.Error{Kind: payment.ErrDeclined, HTTPStatus: 402}
	badCard     = &payment.Error{Kind: payment.ErrInvalid, HTTPStatus: 400, Code: "invalid_number"}
)

// testBreaker is the configuration of the table tests: small numbers, so a case reads as a story.
var testBreaker = payment.BreakerConfig{Window: 10 * time.Second, MinCalls: 4, FailureRatio: 0.5,
	Cooldown: 10 * time.Second, Probes: 2}

func TestBreaker(t *testing.T) {
	type step struct {
		gatewayErr error         // what the wrapped gateway answers
		advance    time.Duration // clock moves before the call
		wantOpen   bool          // the call fails fast with an OpenError
		wantState  payment.BreakerState
	}
	trip := []step{{gatewayErr: unavailable}, {gatewayErr: timeout}, {gatewayErr: unavailable},
		{gatewayErr: unavailable, wantState: payment.Open}}
	then := func(steps ...step) []step { return append(append([]step(nil), trip...), steps...) }
	tests := []struct {
		name  string
		steps []step
	}{
		{"declines and bad cards never trip it", []step{
			{gatewayErr: declined}, {gatewayErr: declined}, {gatewayErr: badCard}, {gatewayErr: declined},
			{gatewayErr: badCard}, {gatewayErr: declined}, {gatewayErr: declined}, {gatewayErr: declined},
		}},
		{"fewer calls than the minimum never trip it", []step{
			{gatewayErr: unavailable}, {gatewayErr: unavailable}, {gatewayErr: timeout},
		}},
		{"trips once the minimum is reached and the ratio met", []step{
			{gatewayErr: unavailable}, {gatewayErr: timeout}, {gatewayErr: nil},
			{gatewayErr: unavailable, wantState: payment.Open},
			{gatewayErr: nil, wantOpen: true, wantState: payment.Open},
		}},
		{"a ratio below the threshold keeps it closed", []step{
			{gatewayErr: nil}, {gatewayErr: nil}, {gatewayErr: nil}, {gatewayErr: unavailable},
			{gatewayErr: unavailable},
			{gatewayErr: unavailable, wantState: payment.Open}, // 3 of 6
		}},
		{"declines are calls the gateway served: they dilute the ratio", []step{
			{gatewayErr: declined}, {gatewayErr: declined}, {gatewayErr: declined}, {gatewayErr: declined},
			{gatewayErr: declined}, {gatewayErr: declined}, {gatewayErr: unavailable}, {gatewayErr: unavailable},
			{gatewayErr: unavailable}, {gatewayErr: timeout}, // 4 of 10
		}},
		{"failures older than the window no longer count", []step{
			{gatewayErr: unavailable}, {gatewayErr: unavailable}, {gatewayErr: unavailable},
			{advance: 11 * time.Second, gatewayErr: nil}, {gatewayErr: nil}, {gatewayErr: nil},
			{gatewayErr: unavailable}, // 1 of 4 in the window; 4 of 7 without it
		}},
		{"half-open closes only after every probe succeeded", then(
			step{advance: 9 * time.Second, wantOpen: true, wantState: payment.Open},
			step{advance: time.Second, gatewayErr: nil, wantState: payment.HalfOpen},
			step{gatewayErr: declined, wantState: payment.Closed},
			step{gatewayErr: unavailable, wantState: payment.Closed}, // a fresh window
			step{gatewayErr: unavailable}, step{gatewayErr: unavailable},
			step{gatewayErr: unavailable, wantState: payment.Open},
		)},
		{"a failed probe opens it again for a full cool-down", then(
			step{advance: 10 * time.Second, gatewayErr: nil, wantState: payment.HalfOpen},
			step{gatewayErr: timeout, wantState: payment.Open},
			step{advance: 5 * time.Second, wantOpen: true, wantState: payment.Open},
			step{advance: 5 * time.Second, gatewayErr: nil, wantState: payment.HalfOpen},
			step{gatewayErr: nil, wantState: payment.Closed},
		)},
		{"caller cancellation is not a failure", []step{
			{gatewayErr: context.Canceled},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled)},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled)},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled)},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := &scripted{}
			clk := &clock{now: time.Unix(1_700_000_000, 0)}
			b := payment.NewBreaker(gw, testBreaker, payment.WithClock(clk.Now))
			for i, st := range tt.steps {
				clk.advance(st.advance)
				gw.set(st.gatewayErr)
				before := gw.calls.Load()
				_, err := b.Authorize(context.Background(), payment.AuthorizeParams{})
				var open *payment.OpenError
				gotOpen := errors.As(err, &open)
				if gotOpen != st.wantOpen {
					t.Fatalf("step %d: fail-fast = %v (err %v), want %v", i, gotOpen, err, st.wantOpen)
				}
				if gotOpen {
					if gw.calls.Load() != before {
						t.Fatalf("step %d: an open breaker called the gateway", i)
					}
					if !errors.Is(err, payment.ErrUnavailable) || !errors.Is(err, payment.ErrCircuitOpen) {
						t.Fatalf("step %d: open error %v should match ErrUnavailable and ErrCircuitOpen", i, err)
					}
					if open.RetryAfter <= 0 || open.RetryAfter > 10*time.Second {
						t.Fatalf("step %d: RetryAfter = %v, want in (0, 10s]", i, open.RetryAfter)
					}
				} else if !errors.Is(err, st.gatewayErr) && err != st.gatewayErr {
					t.Fatalf("step %d: err = %v, want the gateway's %v", i, err, st.gatewayErr)
				}
				if got := b.State(); got != st.wantState {
					t.Fatalf("step %d: state = %v, want %v", i, got, st.wantState)
				}
			}
		})
	}
}

// TestBreakerIgnoresFans: a hundred fans whose cards are declined, at once, never open it; it measures the
// gateway, which answered every one of them.
func TestBreakerIgnoresFans(t *testing.T) {
	gw := &scripted{}
	gw.set(declined)
	b := payment.NewBreaker(gw, payment.BreakerConfig{}) // the defaults booking runs with
	var wg sync.WaitGroup
	var fast atomic.Int64
	for fan := range 100 {
		wg.Go(func() {
			_, err := b.Authorize(context.Background(), payment.AuthorizeParams{
				PaymentMethod: "pm_card_declined", IdempotencyKey: fmt.Sprintf("fan-%d", fan)})
			if errors.Is(err, payment.ErrCircuitOpen) {
				fast.Add(1)
			}
		})
	}
	wg.Wait()
	if fast.Load() != 0 || b.State() != payment.Closed || gw.calls.Load() != 100 {
		t.Fatalf("after 100 declines: %d refused fast, state %v, %d gateway calls; want 0, closed, 100",
			fast.Load(), b.State(), gw.calls.Load())
	}
}

// TestBreakerHalfOpenProbes: after the cool-down exactly Probes of many concurrent callers reach the gateway, and
// their success closes it.
func TestBreakerHalfOpenProbes(t *testing.T) {
	for _, probes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d probes", probes), func(t *testing.T) {
			release := make(chan struct{})
			gw := &blocking{release: release}
			clk := &clock{now: time.Unix(1_700_000_000, 0)}
			var changes []payment.BreakerState
			var mu sync.Mutex
			b := payment.NewBreaker(gw, payment.BreakerConfig{MinCalls: 1, Cooldown: time.Second, Probes: probes},
				payment.WithClock(clk.Now), payment.OnStateChange(func(s payment.BreakerState) {
					mu.Lock()
					changes = append(changes, s)
					mu.Unlock()
				}))
			gw.fail.Store(true)
			close(release)
			if _, err := b.Capture(context.Background(), "pi_1", "k"); !errors.Is(err, payment.ErrUnavailable) {
				t.Fatalf("first call: %v", err)
			}
			if b.State() != payment.Open {
				t.Fatalf("state = %v, want open", b.State())
			}
			clk.advance(time.Second)
			if b.State() != payment.HalfOpen {
				t.Fatalf("state after cool-down = %v, want half-open", b.State())
			}

			gw.fail.Store(false)
			gw.release = make(chan struct{})
			const callers = 20
			var wg sync.WaitGroup
			var fast atomic.Int64
			for range callers {
				wg.Go(func() {
					if _, err := b.Void(context.Background(), "pi_1", "k"); errors.Is(err, payment.ErrCircuitOpen) {
						fast.Add(1)
					}
				})
			}
			// The probes are held at the gateway until every other caller has been turned away.
			for deadline := time.Now().Add(10 * time.Second); fast.Load() < int64(callers-probes) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			close(gw.release)
			wg.Wait()
			if got := gw.calls.Load(); got != int64(1+probes) {
				t.Fatalf("gateway calls = %d, want %d (the tripping call and the probes)", got, 1+probes)
			}
			if fast.Load() != int64(callers-probes) {
				t.Fatalf("fail-fast answers = %d, want %d", fast.Load(), callers-probes)
			}
			if b.State() != payment.Closed {
				t.Fatalf("state after successful probes = %v, want closed", b.State())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(changes) != 3 || changes[0] != payment.Open || changes[1] != payment.HalfOpen || changes[2] != payment.Closed {
				t.Fatalf("state changes = %v, want [open half-open closed]", changes)
			}
		})
	}
}

// blocking is a Gateway whose Void waits for release.
type blocking struct {
	scripted
	release chan struct{}
	fail    atomic.Bool
}

func (g *blocking) answer() error {
	g.calls.Add(1)
	<-g.release
	if g.fail.Load() {
		return unavailable
	}
	return nil
}

func (g *blocking) Capture(context.Context, string, string) (payment.Intent, error) {
	return payment.Intent{}, g.answer()
}

func (g *blocking) Void(context.Context, string, string) (payment.Intent, error) {
	return payment.Intent{}, g.answer()
}
