package sim

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/flashseat/flashseat/shared/infra/env"
)

// Config configures a simulator.
type Config struct {
	Addr string // listen address for Run, e.g. ":8082"
	// WebhookURL receives signed events; empty sends none.
	WebhookURL string
	// WebhookSecret signs the events; with WebhookURL set and no secret, events go unsigned (and a verifying
	// receiver will refuse them), which Run logs as a warning.
	WebhookSecret string
	// APIKey, when set, is the only secret key accepted; empty accepts any non-empty key, as stripe-mock does.
	APIKey string
	// Latency delays every answer.
	Latency time.Duration
	// FailureRate in [0,1] is the share of calls answered 500 without any effect.
	FailureRate float64
	// SlowDelay is how long pm_card_slow (and the slow test card) takes to authorize. Default 8s.
	SlowDelay time.Duration
	// PublishableKey, when set, is the only publishable key POST /v1/payment_methods accepts (besides the secret
	// key); empty accepts any key starting with pk_.
	PublishableKey string
	// PublicURL is the simulator's origin as a fan's browser reaches it, used in the 3-D Secure challenge's URL;
	// empty takes the scheme-less Host of the request that created the intent, as http://.
	PublicURL string
}

// Validate reports a config Run would not work with.
func (c Config) Validate() error {
	if c.FailureRate < 0 || c.FailureRate > 1 || math.IsNaN(c.FailureRate) {
		return fmt.Errorf("sim: failure rate %v outside [0,1]", c.FailureRate)
	}
	if c.Latency < 0 || c.SlowDelay < 0 {
		return errors.New("sim: latency and slow delay must not be negative")
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("sim: public URL %q must be an http(s) origin", c.PublicURL)
		}
	}
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("sim: webhook URL %q must be an http(s) URL", c.WebhookURL)
		}
	}
	return nil
}

// ConfigFromEnv reads PAYSIM_ADDR (default ":8082"), PAYMENT_WEBHOOK_URL (default
// "http://127.0.0.1:8081/webhooks/payments"; "off" disables webhooks), PAYMENT_WEBHOOK_SECRET, PAYSIM_API_KEY,
// PAYSIM_LATENCY (a Go duration), PAYSIM_FAILURE_RATE (0..1), PAYSIM_SLOW_DELAY (a Go duration),
// PAYSIM_PUBLISHABLE_KEY and PAYSIM_PUBLIC_URL, by the rules every flashseat binary reads its environment with
// (shared/infra/env).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	r := env.New(getenv)
	c := Config{
		Addr:          r.String("PAYSIM_ADDR", ":8082"),
		WebhookURL:    r.String("PAYMENT_WEBHOOK_URL", "http://127.0.0.1:8081/webhooks/payments"),
		WebhookSecret: r.String("PAYMENT_WEBHOOK_SECRET", ""),
		APIKey:        r.String("PAYSIM_API_KEY", ""),
		Latency:       r.Duration("PAYSIM_LATENCY", 0),
		FailureRate:   r.Float("PAYSIM_FAILURE_RATE", 0),
		SlowDelay:     r.Duration("PAYSIM_SLOW_DELAY", 0),
		// The names are the simulator's own: booking has PAYMENT_PUBLISHABLE_KEY and PAYMENT_PUBLIC_URL for what
		// it tells browsers, which under `make run` are these same values.
		PublishableKey: r.String("PAYSIM_PUBLISHABLE_KEY", ""),
		PublicURL:      strings.TrimRight(r.String("PAYSIM_PUBLIC_URL", ""), "/"),
	}
	if c.WebhookURL == "off" {
		c.WebhookURL = ""
	}
	if err := r.Err(); err != nil {
		return Config{}, fmt.Errorf("sim: %w", err)
	}
	return c, c.Validate()
}
