package app

import (
	"time"

	"github.com/flashseat/flashseat/shared/infra/env"
)

// WebhookSettings is the operator webhooks' part of Config.
type WebhookSettings struct {
	Timeout     time.Duration // WEBHOOK_TIMEOUT: one delivery attempt; default 10s
	MaxAttempts int           // WEBHOOK_MAX_ATTEMPTS: attempts before a delivery is FAILED; default 12
	RetryBase   time.Duration // WEBHOOK_RETRY_BASE: the first retry's delay, doubling up to 1h; default 10s
	// AllowPrivate (WEBHOOK_ALLOW_PRIVATE, default false) lets endpoints be on loopback, private and link-local
	// addresses: for development and tests, whose receivers run beside the platform. Off, such endpoints are
	// refused (server-side request forgery).
	AllowPrivate bool
}

func loadWebhookSettings(r *env.Reader) WebhookSettings {
	return WebhookSettings{
		Timeout:     r.PositiveDuration("WEBHOOK_TIMEOUT", 10*time.Second),
		MaxAttempts: r.IntIn("WEBHOOK_MAX_ATTEMPTS", 12, 1, 100),
		RetryBase:   r.PositiveDuration("WEBHOOK_RETRY_BASE", 10*time.Second),
		// Off unless set: such endpoints are refused (server-side request forgery).
		AllowPrivate: r.Bool("WEBHOOK_ALLOW_PRIVATE", false),
	}
}
