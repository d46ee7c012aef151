package app

import (
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/notify"
	"github.com/flashseat/flashseat/booking/ticket/wallet"
	"github.com/flashseat/flashseat/shared/infra/env"
)

// NotifyConfig is the fan notifications' part of Config. With neither SMTP_ADDR nor NOTIFY_WEBHOOK_URL set, fans
// are not notified.
type NotifyConfig struct {
	SMTP    notify.SMTPConfig    // SMTP_ADDR (host:port), SMTP_FROM, SMTP_USERNAME, SMTP_PASSWORD
	Webhook notify.WebhookConfig // NOTIFY_WEBHOOK_URL, NOTIFY_WEBHOOK_SECRET
	// SiteURL is the site's origin as fans reach it, for the booking page's link in a rotating-code show's
	// confirmation (SITE_URL; default the edge under `make run`).
	SiteURL string
}

func loadNotifyConfig(r *env.Reader) NotifyConfig {
	c := NotifyConfig{
		SMTP: notify.SMTPConfig{Addr: r.String("SMTP_ADDR", ""), From: r.String("SMTP_FROM", "flashseat <tickets@flashseat.local>"),
			Username: r.String("SMTP_USERNAME", ""), Password: r.String("SMTP_PASSWORD", ""), Timeout: 10 * time.Second},
		Webhook: notify.WebhookConfig{URL: r.String("NOTIFY_WEBHOOK_URL", ""), Secret: r.String("NOTIFY_WEBHOOK_SECRET", "")},
		SiteURL: strings.TrimRight(r.String("SITE_URL", "http://localhost:8080"), "/"),
	}
	if u, err := url.Parse(c.SiteURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" {
		r.Fail("SITE_URL: want an http(s) origin, got %q", c.SiteURL)
	}
	if c.SMTP.Addr != "" {
		if _, err := notify.NewSMTP(c.SMTP); err != nil {
			r.Fail("%w", err)
		}
	}
	if c.Webhook.URL != "" {
		if _, err := notify.NewWebhook(c.Webhook); err != nil {
			r.Fail("%w", err)
		}
	}
	return c
}

// newFans is the fan notifier of cfg, or nil when no way to reach fans is configured. The configuration was
// validated by LoadConfig.
func newFans(cfg Config, svc *booking.Service, store ledger, log *slog.Logger) (*notify.Fans, error) {
	var ns []notify.Notifier
	if cfg.Notify.SMTP.Addr != "" {
		n, err := notify.NewSMTP(cfg.Notify.SMTP)
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	if cfg.Notify.Webhook.URL != "" {
		n, err := notify.NewWebhook(cfg.Notify.Webhook)
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		log.Info("fan notifications off: set SMTP_ADDR or NOTIFY_WEBHOOK_URL")
		return nil, nil
	}
	f, err := notify.New(store, svc, log, ns...)
	if err != nil {
		return nil, err
	}
	f.SiteURL = cfg.Notify.SiteURL
	return f, nil
}

// loadPassConfig reads the Apple Wallet pass certificate (PASS_*). Without PASS_CERT_FILE there are no passes: the
// booking page hides Add to Wallet and the pass endpoint answers 404.
func loadPassConfig(r *env.Reader) wallet.Config {
	c := wallet.Config{CertFile: r.String("PASS_CERT_FILE", ""), KeyFile: r.String("PASS_KEY_FILE", ""),
		WWDRFile: r.String("PASS_WWDR_FILE", ""), PassTypeID: r.String("PASS_TYPE_ID", ""),
		TeamID: r.String("PASS_TEAM_ID", ""), Organization: r.String("PASS_ORGANIZATION", "flashseat")}
	if c.CertFile != "" {
		if _, err := wallet.New(c); err != nil {
			r.Fail("%w", err)
		}
	}
	return c
}

// newPasses is the pass issuer of cfg, or nil when no certificate is configured.
func newPasses(cfg Config) (*wallet.Issuer, error) {
	if cfg.Passes.CertFile == "" {
		return nil, nil
	}
	return wallet.New(cfg.Passes)
}
