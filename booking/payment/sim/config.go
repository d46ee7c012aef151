package sim

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"
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
	// SlowDelay is how long pm_card_slow takes to authorize. Default 8s.
	SlowDelay time.Duration
}

// Validate reports a config Run would not work with.
func (c Config) Validate() error {
	if c.FailureRate < 0 || c.FailureRate > 1 || math.IsNaN(c.FailureRate) {
		return fmt.Errorf("sim: failure rate %v outside [0,1]", c.FailureRate)
	}
	if c.Latency < 0 || c.SlowDelay < 0 {
		return errors.New("sim: latency and slow delay must not be negative")
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
// PAYSIM_LATENCY (a Go duration), PAYSIM_FAILURE_RATE (0..1) and PAYSIM_SLOW_DELAY (a Go duration).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:          getenv("PAYSIM_ADDR"),
		WebhookURL:    getenv("PAYMENT_WEBHOOK_URL"),
		WebhookSecret: getenv("PAYMENT_WEBHOOK_SECRET"),
		APIKey:        getenv("PAYSIM_API_KEY"),
	}
	if c.Addr == "" {
		c.Addr = ":8082"
	}
	switch c.WebhookURL {
	case "":
		c.WebhookURL = "http://127.0.0.1:8081/webhooks/payments"
	case "off":
		c.WebhookURL = ""
	}
	var err error
	durations := []struct {
		name string
		dst  *time.Duration
	}{{"PAYSIM_LATENCY", &c.Latency}, {"PAYSIM_SLOW_DELAY", &c.SlowDelay}}
	for _, d := range durations {
		if v := getenv(d.name); v != "" {
			if *d.dst, err = time.ParseDuration(v); err != nil {
				return Config{}, fmt.Errorf("sim: %s: %w", d.name, err)
			}
		}
	}
	if v := getenv("PAYSIM_FAILURE_RATE"); v != "" {
		if c.FailureRate, err = strconv.ParseFloat(v, 64); err != nil {
			return Config{}, fmt.Errorf("sim: PAYSIM_FAILURE_RATE: %w", err)
		}
	}
	return c, c.Validate()
}
