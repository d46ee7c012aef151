package booking

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/ticket"
)

// Checkout is payments: the pay saga (pay.go, its steps in pay_steps.go), the recovery worker that finishes
// what a saga left (pay_recover.go), the gateway's webhooks (pay_webhook.go), refunds (refund.go), and tickets
// and check-in (tickets.go), on top of the holds. The gateway speaks booking/payment's vocabulary; tickets are
// signed with booking/ticket. Both are technology-free, so the domain may use them.

// PaymentStore is the ledger as the Checkout needs it, the union of what each of its parts uses; booking/postgres
// implements it.
type PaymentStore interface {
	AttemptStore
	SaleStore
	RefundStore
	TicketStore
	PolicyStore
	TransferStore
	ResaleStore
	GateStore
	WebhookStore
	// RelayOutbox hands up to limit unpublished lifecycle events, oldest first, to publish and marks those it
	// accepted published, in one transaction that other relays skip: each event is published at least once, and
	// more than once only if the commit after publishing fails. The recovery worker relays with it when
	// CheckoutConfig.Publish is set.
	RelayOutbox(ctx context.Context, limit int, publish func(OutboxEvent) error) (int, error)
}

// CheckoutConfig tunes Checkout.
type CheckoutConfig struct {
	// GatewayTimeout is how long the gateway client waits for an answer (its own setting, repeated here because
	// leases are derived from it). Default 5s.
	GatewayTimeout time.Duration
	// HoldMargin is the least time a hold is given before the gateway is asked, so it cannot lapse while the
	// gateway thinks. Default 2m.
	HoldMargin time.Duration
	// RefundWindow: refunds are accepted until this long before the show starts. Default 48h.
	RefundWindow time.Duration
	// RecoverEvery is the recovery worker's period. Default 2s.
	RecoverEvery time.Duration
	// PendingRetry is how soon the worker asks the gateway again about an attempt whose outcome is unknown.
	// Default 1s.
	PendingRetry time.Duration
	// Lease is how long the owner of an attempt may act on it before the recovery worker may take it over: the
	// time a saga may take between two of its writes. Default 2×GatewayTimeout + 5s.
	Lease time.Duration
	// ActionWindow is how long a fan has to pass a 3-D Secure challenge: the hold is extended to last at least
	// this long when the card asks for one, and past it the worker cancels the intent and the booking is HELD
	// again. Default 5m.
	ActionWindow time.Duration
	// ActionRetry is how often the worker asks the gateway about a pending challenge when no webhook has said it
	// was answered. Default 5s.
	ActionRetry time.Duration
	// GiveUpAfter bounds how long an attempt may stay without an answer from the gateway (timeouts, 5xx) before
	// the worker stops asking and lets the booking's hold run its course; a later success is caught by the
	// webhook and given back. Default 15m.
	GiveUpAfter time.Duration
	// FailingAfter is how long the worker asks again about an attempt that the gateway keeps answering with a
	// server error (a 5xx it sent, not a timeout or a refused connection) before it ends the attempt as failed:
	// the gateway is there and fails this payment, so asking for GiveUpAfter would keep the seats in limbo for
	// nothing. A transient 5xx is over well within it. Default 10s.
	FailingAfter time.Duration
	// ReplayWait is how long a replay of a key waits for the first request's outcome before answering "in
	// progress". Default GatewayTimeout + 2s.
	ReplayWait time.Duration
	// WebhookSecret verifies the gateway's webhooks; WebhookTolerance bounds their age (default 5m).
	WebhookSecret    string
	WebhookTolerance time.Duration
	Now              func() time.Time
	Logger           *slog.Logger
	// OnOutcome is told every pay outcome (metrics); nil is fine.
	OnOutcome func(Outcome)
	// Publish relays the outbox's lifecycle events (the worker calls it); nil leaves them in the outbox.
	Publish func(ctx context.Context, e OutboxEvent) error
}

// Checkout is the pay saga, its recovery worker, refunds, tickets and check-in, on top of the Holds.
type Checkout struct {
	holds    *Holds
	store    PaymentStore
	gw       payment.Gateway
	signer   *ticket.Signer
	verifier *ticket.Verifier
	cfg      CheckoutConfig
	log      *slog.Logger

	// life bounds every saga: a request's own context is not used past the first read, so a fan who hangs up
	// does not abandon money half-moved; stopping the process (Close) does, and the worker finishes the job.
	life  context.Context
	close context.CancelFunc
	kick  chan struct{}
	wg    sync.WaitGroup
}

// NewCheckout returns Checkout over svc's holds.
func NewCheckout(svc *Service, store PaymentStore, gw payment.Gateway, signer *ticket.Signer, verifier *ticket.Verifier, cfg CheckoutConfig) *Checkout {
	if cfg.GatewayTimeout <= 0 {
		cfg.GatewayTimeout = 5 * time.Second
	}
	if cfg.HoldMargin <= 0 {
		cfg.HoldMargin = 2 * time.Minute
	}
	if cfg.RefundWindow <= 0 {
		cfg.RefundWindow = 48 * time.Hour
	}
	if cfg.RecoverEvery <= 0 {
		cfg.RecoverEvery = 2 * time.Second
	}
	if cfg.PendingRetry <= 0 {
		cfg.PendingRetry = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2*cfg.GatewayTimeout + 5*time.Second
	}
	if cfg.ActionWindow <= 0 {
		cfg.ActionWindow = 5 * time.Minute
	}
	if cfg.ActionRetry <= 0 {
		cfg.ActionRetry = 5 * time.Second
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = 15 * time.Minute
	}
	if cfg.FailingAfter <= 0 {
		cfg.FailingAfter = 10 * time.Second
	}
	if cfg.ReplayWait <= 0 {
		cfg.ReplayWait = cfg.GatewayTimeout + 2*time.Second
	}
	if cfg.Now == nil {
		cfg.Now = svc.Holds.cfg.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = svc.Holds.log
	}
	life, cancel := context.WithCancel(context.Background())
	return &Checkout{holds: svc.Holds, store: store, gw: gw, signer: signer, verifier: verifier, cfg: cfg, log: cfg.Logger,
		life: life, close: cancel, kick: make(chan struct{}, 1)}
}

// Close stops Checkout gracefully: sagas and captures in flight get up to GatewayTimeout to finish, then are cut
// where they stand, for the next process's recovery worker to finish.
func (p *Checkout) Close() {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	t := time.NewTimer(p.cfg.GatewayTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	p.Kill()
}

// Kill stops every saga in flight where it stands, as a crash would, and waits for them to return.
func (p *Checkout) Kill() {
	p.close()
	p.wg.Wait()
}

// Wait waits for the sagas in flight and their background captures to finish, without stopping them.
func (p *Checkout) Wait() { p.wg.Wait() }

func (p *Checkout) lease() time.Duration { return p.cfg.Lease }

// sagaContext keeps ctx's values (request id for logs) but not its cancellation; Close cancels it instead.
func (p *Checkout) sagaContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(p.life, cancel)
	return sctx, func() { stop(); cancel() }
}

// GatewayState is the payment gateway's circuit breaker position on this replica ("closed", "open",
// "half-open"), or "" when the gateway has no breaker.
func (p *Checkout) GatewayState() string {
	if b, ok := p.gw.(interface{ State() payment.BreakerState }); ok {
		return b.State().String()
	}
	return ""
}
