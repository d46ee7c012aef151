package app

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/stripe"
	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/shared/infra/env"
	"github.com/flashseat/flashseat/shared/token"
)

// PaymentConfig is the payments' part of Config.
type PaymentConfig struct {
	// GatewayURL is the Stripe-compatible API: the bundled simulator by default, https://api.stripe.com in
	// production (PAYMENT_GATEWAY_URL, default http://127.0.0.1:8082).
	GatewayURL string
	APIKey     string        // PAYMENT_API_KEY, the secret key; default sk_test_flashseat (the simulator takes any)
	Timeout    time.Duration // PAYMENT_TIMEOUT, per gateway call; default 5s
	// Breaker tunes the gateway's circuit breaker: it opens when, over PAYMENT_BREAKER_WINDOW (default 30s), at
	// least PAYMENT_BREAKER_MIN_CALLS calls (default 20) were made and PAYMENT_BREAKER_FAILURE_RATIO of them
	// (default 0.5) found the gateway unavailable; it stays open PAYMENT_BREAKER_COOLDOWN (default 10s), then
	// closes after PAYMENT_BREAKER_PROBES successful probes (default 3).
	Breaker         payment.BreakerConfig
	WebhookSecret   string        // PAYMENT_WEBHOOK_SECRET; unset refuses every webhook
	RecoverInterval time.Duration // PAYMENT_RECOVER_INTERVAL, the recovery worker's period; default 2s
	// PublicURL is the gateway's origin as browsers reach it, where the checkout tokenizes cards
	// (PAYMENT_PUBLIC_URL; default GatewayURL, which under `make run` is the simulator on this machine).
	PublicURL string
	// PublishableKey is the key browsers tokenize cards with (PAYMENT_PUBLISHABLE_KEY; default
	// pk_test_flashseat, which the simulator accepts).
	PublishableKey string
	// ActionWindow is how long a fan has to pass a 3-D Secure challenge, the hold kept meanwhile
	// (PAYMENT_ACTION_WINDOW, default 5m).
	ActionWindow time.Duration
	// TicketKey signs ticket codes (TICKET_SIGNING_KEY, a base64 32-byte Ed25519 seed); generated when unset.
	TicketKey          token.Key
	TicketKeyGenerated bool
}

// loadPaymentConfig reads PaymentConfig through r, which collects its problems with LoadConfig's.
func loadPaymentConfig(r *env.Reader) PaymentConfig {
	c := PaymentConfig{
		GatewayURL:      r.String("PAYMENT_GATEWAY_URL", "http://127.0.0.1:8082"),
		APIKey:          r.String("PAYMENT_API_KEY", "sk_test_flashseat"),
		Timeout:         r.PositiveDuration("PAYMENT_TIMEOUT", 5*time.Second),
		WebhookSecret:   r.String("PAYMENT_WEBHOOK_SECRET", ""),
		RecoverInterval: r.PositiveDuration("PAYMENT_RECOVER_INTERVAL", 2*time.Second),
		PublishableKey:  r.String("PAYMENT_PUBLISHABLE_KEY", "pk_test_flashseat"),
		ActionWindow:    r.PositiveDuration("PAYMENT_ACTION_WINDOW", 5*time.Minute),
	}
	c.PublicURL = strings.TrimRight(r.String("PAYMENT_PUBLIC_URL", c.GatewayURL), "/")
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") {
		r.Fail("PAYMENT_PUBLIC_URL: want an http(s) origin, got %q", c.PublicURL)
	}
	if !strings.HasPrefix(c.PublishableKey, "pk_") {
		r.Fail("PAYMENT_PUBLISHABLE_KEY: want a publishable key (pk_...)")
	}
	c.Breaker = payment.BreakerConfig{
		Window:       r.PositiveDuration("PAYMENT_BREAKER_WINDOW", 30*time.Second),
		Cooldown:     r.PositiveDuration("PAYMENT_BREAKER_COOLDOWN", 10*time.Second),
		MinCalls:     r.IntIn("PAYMENT_BREAKER_MIN_CALLS", 20, 1, 100000),
		Probes:       r.IntIn("PAYMENT_BREAKER_PROBES", 3, 1, 1000),
		FailureRatio: r.Float("PAYMENT_BREAKER_FAILURE_RATIO", 0.5),
	}
	if c.Breaker.FailureRatio <= 0 || c.Breaker.FailureRatio > 1 {
		r.Fail("PAYMENT_BREAKER_FAILURE_RATIO: want a number in (0, 1], got %v", c.Breaker.FailureRatio)
	}
	if u, err := url.Parse(c.GatewayURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.Fail("PAYMENT_GATEWAY_URL: want an http(s) URL, got %q", c.GatewayURL)
	}
	var err error
	if c.TicketKey, c.TicketKeyGenerated, err = ticket.LoadKey(r.String("TICKET_SIGNING_KEY", "")); err != nil {
		r.Fail("TICKET_SIGNING_KEY: %w", err)
	}
	return c
}

// Public is what browsers are told of the gateway. Stripe itself (api.stripe.com) is "stripe", whose checkout
// loads Stripe.js; anything else speaks the simulator's Stripe.js-like tokenization.
func (c PaymentConfig) Public() bookinghttp.PublicGateway {
	provider := "sim"
	if u, err := url.Parse(c.GatewayURL); err == nil && u.Host == "api.stripe.com" {
		provider = "stripe"
	}
	return bookinghttp.PublicGateway{Provider: provider, PublishableKey: c.PublishableKey, APIBase: c.PublicURL}
}

// newPayments builds the gateway (Stripe adapter behind a circuit breaker), the ticket signer and the Checkout. Their
// outbox is relayed to the event stream by the relay Run starts (events.go), not by the payments worker.
func newPayments(cfg Config, svc *booking.Service, store booking.PaymentStore,
	opened func(context.Context, time.Time) error, reg prometheus.Registerer, log *slog.Logger) (*booking.Checkout, error) {
	pc := cfg.Payment
	if pc.TicketKeyGenerated {
		log.Warn("TICKET_SIGNING_KEY is not set: tickets are signed with a random key, unverifiable after a restart")
	}
	if pc.WebhookSecret == "" {
		log.Warn("PAYMENT_WEBHOOK_SECRET is not set: payment webhooks are refused (the recovery worker still resolves payments)")
	}
	client, err := stripe.New(stripe.Config{BaseURL: pc.GatewayURL, SecretKey: pc.APIKey, Timeout: pc.Timeout})
	if err != nil {
		return nil, err
	}
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "booking_payments_total",
		Help: "Pay requests by outcome."}, []string{"outcome"})
	if reg != nil {
		if err := reg.Register(outcomes); err != nil {
			return nil, err
		}
	}
	gw := payment.NewBreaker(client, pc.Breaker,
		payment.OnStateChange(func(s payment.BreakerState) {
			log.Warn("payment gateway circuit breaker", "state", s.String())
			if s == payment.Open {
				go recordOpening(opened, log)
			}
		}))
	if reg != nil {
		// Read at scrape time, so the gauge never lags a change told out of order.
		state := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "booking_payment_breaker_state",
			Help: "The payment gateway's circuit breaker: 0 closed, 1 open (refusing calls), 2 half-open (probing)."},
			func() float64 { return float64(gw.State()) })
		if err := reg.Register(state); err != nil {
			return nil, err
		}
	}
	signer, err := ticket.NewSigner(pc.TicketKey)
	if err != nil {
		return nil, err
	}
	verifier := ticket.NewVerifier(token.NewStaticKeys(signer.Public()))
	return booking.NewCheckout(svc, store, gw, signer, verifier, booking.CheckoutConfig{
		GatewayTimeout: pc.Timeout,
		RefundWindow:   cfg.RefundWindow,
		RecoverEvery:   pc.RecoverInterval,
		ActionWindow:   pc.ActionWindow,
		WebhookSecret:  pc.WebhookSecret,
		Logger:         log,
		OnOutcome:      func(o booking.Outcome) { outcomes.WithLabelValues(string(o)).Inc() },
	}), nil
}

// recordOpening records a breaker opening for the after-sale report (payments' breakerOpenings), off the calling
// request: a ledger that is down loses the mark, and the log line above still says it.
func recordOpening(opened func(context.Context, time.Time) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := opened(ctx, time.Now()); err != nil {
		log.Warn("payment breaker opening not recorded", "err", err)
	}
}
