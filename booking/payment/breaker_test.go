package payment_test

import (
	"context"
	"errors"
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
)

func TestBreaker(t *testing.T) {
	type step struct {
		gatewayErr error         // what the wrapped gateway answers
		advance    time.Duration // clock moves before the call
		wantOpen   bool          // the call fails fast with an OpenError
		wantState  payment.BreakerState
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"declines never trip it", []step{
			{gatewayErr: declined, wantState: payment.Closed},
			{gatewayErr: declined, wantState: payment.Closed},
			{gatewayErr: declined, wantState: payment.Closed},
			{gatewayErr: declined, wantState: payment.Closed},
		}},
		{"opens after threshold consecutive failures", []step{
			{gatewayErr: unavailable, wantState: payment.Closed},
			{gatewayErr: timeout, wantState: payment.Closed},
			{gatewayErr: unavailable, wantState: payment.Open},
			{gatewayErr: nil, wantOpen: true, wantState: payment.Open},
		}},
		{"a success in between resets the count", []step{
			{gatewayErr: unavailable, wantState: payment.Closed},
			{gatewayErr: unavailable, wantState: payment.Closed},
			{gatewayErr: nil, wantState: payment.Closed},
			{gatewayErr: unavailable, wantState: payment.Closed},
			{gatewayErr: unavailable, wantState: payment.Closed},
			{gatewayErr: declined, wantState: payment.Closed},
		}},
		{"probe success closes it", []step{
			{gatewayErr: unavailable}, {gatewayErr: unavailable}, {gatewayErr: unavailable, wantState: payment.Open},
			{advance: 9 * time.Second, wantOpen: true, wantState: payment.Open},
			{advance: time.Second, gatewayErr: nil, wantState: payment.Closed},
			{gatewayErr: unavailable, wantState: payment.Closed},
		}},
		{"probe failure opens it again for a full cool-down", []step{
			{gatewayErr: unavailable}, {gatewayErr: unavailable}, {gatewayErr: unavailable, wantState: payment.Open},
			{advance: 10 * time.Second, gatewayErr: timeout, wantState: payment.Open},
			{advance: 5 * time.Second, wantOpen: true, wantState: payment.Open},
			{advance: 5 * time.Second, gatewayErr: nil, wantState: payment.Closed},
		}},
		{"caller cancellation is not a failure", []step{
			{gatewayErr: context.Canceled, wantState: payment.Closed},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled), wantState: payment.Closed},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled), wantState: payment.Closed},
			{gatewayErr: errors.Join(payment.ErrTimeout, context.Canceled), wantState: payment.Closed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := &scripted{}
			clk := &clock{now: time.Unix(1_700_000_000, 0)}
			b := payment.NewBreaker(gw, 3, 10*time.Second, payment.WithClock(clk.Now))
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

// TestBreakerHalfOpenSingleProbe: after the cool-down exactly one of many concurrent callers reaches the gateway.
func TestBreakerHalfOpenSingleProbe(t *testing.T) {
	release := make(chan struct{})
	gw := &blocking{release: release}
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	var changes []payment.BreakerState
	var mu sync.Mutex
	b := payment.NewBreaker(gw, 1, time.Second, payment.WithClock(clk.Now), payment.OnStateChange(func(s payment.BreakerState) {
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
	var wg sync.WaitGroup
	var fast atomic.Int64
	for range 20 {
		wg.Go(func() {
			if _, err := b.Void(context.Background(), "pi_1", "k"); errors.Is(err, payment.ErrCircuitOpen) {
				fast.Add(1)
			}
		})
	}
	// The probe is held at the gateway until every other caller has been turned away.
	for deadline := time.Now().Add(10 * time.Second); fast.Load() < 19 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(gw.release)
	wg.Wait()
	if got := gw.calls.Load(); got != 2 {
		t.Fatalf("gateway calls = %d, want 2 (the tripping call and one probe)", got)
	}
	if fast.Load() != 19 {
		t.Fatalf("fail-fast answers = %d, want 19", fast.Load())
	}
	if b.State() != payment.Closed {
		t.Fatalf("state after successful probe = %v, want closed", b.State())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 3 || changes[0] != payment.Open || changes[1] != payment.HalfOpen || changes[2] != payment.Closed {
		t.Fatalf("state changes = %v, want [open half-open closed]", changes)
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
