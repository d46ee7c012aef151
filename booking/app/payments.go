package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/booking"
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
	// The circuit breaker opens after BreakerThreshold consecutive gateway failures for BreakerCooldown
	// (PAYMENT_BREAKER_THRESHOLD, default 5; PAYMENT_BREAKER_COOLDOWN, default 10s).
	BreakerThreshold int
	BreakerCooldown  time.Duration
	WebhookSecret    string        // PAYMENT_WEBHOOK_SECRET; unset refuses every webhook
	RecoverInterval  time.Duration // PAYMENT_RECOVER_INTERVAL, the recovery worker's period; default 2s
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
		BreakerCooldown: dur("PAYMENT_BREAKER_COOLDOWN", 10*time.Second),
		WebhookSecret:   str("PAYMENT_WEBHOOK_SECRET", ""),
		RecoverInterval: dur("PAYMENT_RECOVER_INTERVAL", 2*time.Second),
	}
	c.BreakerThreshold = 5
	if v := str("PAYMENT_BREAKER_THRESHOLD", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, fmt.Errorf("PAYMENT_BREAKER_THRESHOLD: want an integer in [1, 1000], got %q", v))
		} else {
			c.BreakerThreshold = n
		}
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

// newPayments builds the gateway (Stripe adapter behind a circuit breaker), the ticket signer and Payments. Their
// outbox is relayed to the event stream by the relay Run starts (events.go), not by the payments worker.
func newPayments(cfg Config, svc *booking.Service, store booking.PaymentStore,
	reg prometheus.Registerer, log *slog.Logger) (*booking.Payments, error) {
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
	breakerOpen := prometheus.NewGauge(prometheus.GaugeOpts{Name: "booking_payment_breaker_open",
		Help: "1 while the payment gateway's circuit breaker refuses calls."})
	if reg != nil {
		if err := errors.Join(reg.Register(outcomes), reg.Register(breakerOpen)); err != nil {
			return nil, err
		}
	}
	gw := payment.NewBreaker(client, pc.BreakerThreshold, pc.BreakerCooldown,
		payment.OnStateChange(func(s payment.BreakerState) {
			log.Warn("payment gateway circuit breaker", "state", s.String())
			if s == payment.Open {
				breakerOpen.Set(1)
			} else {
				breakerOpen.Set(0)
			}
		}))
	signer, err := ticket.NewSigner(pc.TicketKey)
	if err != nil {
		return nil, err
	}
	verifier := ticket.NewVerifier(token.NewStaticKeys(signer.Public()))
	return booking.NewPayments(svc, store, gw, signer, verifier, booking.PayConfig{
		GatewayTimeout: pc.Timeout,
		RefundWindow:   cfg.RefundWindow,
		RecoverEvery:   pc.RecoverInterval,
		WebhookSecret:  pc.WebhookSecret,
		Logger:         log,
		OnOutcome:      func(o booking.Outcome) { outcomes.WithLabelValues(string(o)).Inc() },
	}), nil
}
