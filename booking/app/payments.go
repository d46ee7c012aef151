package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/stripe"
	"github.com/flashseat/flashseat/booking/ticket"
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

// loadPaymentConfig reads PaymentConfig with LoadConfig's own readers (which record their parse errors); the
// other problems are returned for LoadConfig to report with its own.
func loadPaymentConfig(str func(k, def string) string, dur func(k string, def time.Duration) time.Duration) (PaymentConfig, []error) {
	var errs []error
	c := PaymentConfig{
		GatewayURL:      str("PAYMENT_GATEWAY_URL", "http://127.0.0.1:8082"),
		APIKey:          str("PAYMENT_API_KEY", "sk_test_flashseat"),
		Timeout:         dur("PAYMENT_TIMEOUT", 5*time.Second),
		WebhookSecret:   str("PAYMENT_WEBHOOK_SECRET", ""),
		RecoverInterval: dur("PAYMENT_RECOVER_INTERVAL", 2*time.Second),
		PublishableKey:  str("PAYMENT_PUBLISHABLE_KEY", "pk_test_flashseat"),
		ActionWindow:    dur("PAYMENT_ACTION_WINDOW", 5*time.Minute),
	}
	c.PublicURL = strings.TrimRight(str("PAYMENT_PUBLIC_URL", c.GatewayURL), "/")
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") {
		errs = append(errs, fmt.Errorf("PAYMENT_PUBLIC_URL: want an http(s) origin, got %q", c.PublicURL))
	}
	if !strings.HasPrefix(c.PublishableKey, "pk_") {
		errs = append(errs, errors.New("PAYMENT_PUBLISHABLE_KEY: want a publishable key (pk_...)"))
	}
	c.Breaker = payment.BreakerConfig{Window: dur("PAYMENT_BREAKER_WINDOW", 30*time.Second),
		Cooldown: dur("PAYMENT_BREAKER_COOLDOWN", 10*time.Second)}
	intVar := func(k string, def, lo, hi int) int {
		v := str(k, "")
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s: want an integer in [%d, %d], got %q", k, lo, hi, v))
			return def
		}
		return n
	}
	c.Breaker.MinCalls = intVar("PAYMENT_BREAKER_MIN_CALLS", 20, 1, 100000)
	c.Breaker.Probes = intVar("PAYMENT_BREAKER_PROBES", 3, 1, 1000)
	c.Breaker.FailureRatio = 0.5
	if v := str("PAYMENT_BREAKER_FAILURE_RATIO", ""); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 1 {
			errs = append(errs, fmt.Errorf("PAYMENT_BREAKER_FAILURE_RATIO: want a number in (0, 1], got %q", v))
		} else {
			c.Breaker.FailureRatio = r
		}
	}
	if c.Breaker.Window <= 0 || c.Breaker.Cooldown <= 0 {
		errs = append(errs, errors.New("PAYMENT_BREAKER_WINDOW and PAYMENT_BREAKER_COOLDOWN: want positive durations"))
	}
	if u, err := url.Parse(c.GatewayURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PAYMENT_GATEWAY_URL: want an http(s) URL, got %q", c.GatewayURL))
	}
	var err error
	if c.TicketKey, c.TicketKeyGenerated, err = ticket.LoadKey(str("TICKET_SIGNING_KEY", "")); err != nil {
		errs = append(errs, fmt.Errorf("TICKET_SIGNING_KEY: %w", err))
	}
	return c, errs
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
	reg prometheus.Registerer, log *slog.Logger) (*booking.Checkout, error) {
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
