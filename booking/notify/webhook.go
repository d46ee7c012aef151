package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// WebhookConfig is a gateway of the operator's that delivers fan messages by other means (SMS, push).
type WebhookConfig struct {
	URL     string // NOTIFY_WEBHOOK_URL
	Secret  string // NOTIFY_WEBHOOK_SECRET: signs each POST as operator webhooks are signed
	Timeout time.Duration
}

// Webhook POSTs each message as JSON {"userId","to","language","kind","eventId","subject","text","html",
// "attachments":[{"name","contentType","contentId","data"(base64)}]}, signed with header Flashseat-Signature
// (t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>). Any fan can be reached, e-mail or not.
type Webhook struct {
	cfg    WebhookConfig
	client *http.Client
}

// NewWebhook returns the notifier of cfg.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("notify: NOTIFY_WEBHOOK_URL: want an http(s) URL, got %q", cfg.URL)
	}
	if len(cfg.Secret) < 16 {
		return nil, fmt.Errorf("notify: NOTIFY_WEBHOOK_SECRET: want at least 16 characters")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Webhook{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

type wireAttachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	ContentID   string `json:"contentId"`
	Data        []byte `json:"data"`
}

// Notify POSTs m; a non-2xx answer is an error (the event is retried).
func (w *Webhook) Notify(ctx context.Context, m Message) error {
	atts := make([]wireAttachment, len(m.Inline))
	for i, a := range m.Inline {
		atts[i] = wireAttachment(a)
	}
	body, err := json.Marshal(map[string]any{"userId": m.UserID, "to": m.To, "language": m.Language, "kind": m.Kind,
		"eventId": m.EventID, "subject": m.Subject, "text": m.Text, "html": m.HTML, "attachments": atts})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Flashseat-Signature", payment.Sign(body, w.cfg.Secret, time.Now()))
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("notify: webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("notify: webhook answered %s", resp.Status)
	}
	return nil
}
