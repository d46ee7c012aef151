package app

import (
	"fmt"
	"strconv"
	"time"
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

func loadWebhookSettings(str func(k, def string) string, dur func(k string, def time.Duration) time.Duration) (WebhookSettings, []error) {
	var errs []error
	c := WebhookSettings{Timeout: dur("WEBHOOK_TIMEOUT", 10*time.Second), MaxAttempts: 12,
		RetryBase: dur("WEBHOOK_RETRY_BASE", 10*time.Second)}
	if v := str("WEBHOOK_ALLOW_PRIVATE", ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("WEBHOOK_ALLOW_PRIVATE: want true or false, got %q", v))
		}
		c.AllowPrivate = b
	}
	if v := str("WEBHOOK_MAX_ATTEMPTS", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			errs = append(errs, fmt.Errorf("WEBHOOK_MAX_ATTEMPTS: want an integer in [1, 100], got %q", v))
		} else {
			c.MaxAttempts = n
		}
	}
	return c, errs
}
